// Package tokenizer reads a Hugging Face tokenizer.json and encodes and decodes
// text with it, for the byte-level BPE tokenizers of the Qwen2/2.5/3 and
// Llama 3 families and the piece tokenizers of Gemma 3 and of the Llama 2
// kind (Llama 2, Mistral 7B v0.1/v0.2, TinyLlama) (pieces.go: BPE over
// characters, spaces spelled "▁", byte tokens "<0xAB>" for characters the
// vocabulary lacks).
//
// It owns the whole path from text to token ids and back:
//
//   - added and special tokens (longest match, left to right) are cut out of
//     the text before anything else, as Hugging Face does;
//   - the normalizer (NFC, NFD, NFKC, NFKD as Unicode defines them, without
//     x/text's stream-safe cut after 30 combining marks; Replace of a literal
//     string, or a Sequence of them; Llama 2's Prepend "▁" at the start of
//     one, before single-character Replaces);
//   - the Split pre-tokenizer, whose regular expression is recognised by exact
//     string comparison and run by a hand-written matcher (Go's regexp lacks the
//     look-ahead in `\s+(?!\S)`); the known patterns are the Qwen2/3 one, the
//     Llama 3 one and GPT-2's ByteLevel one; any other pattern is an error at
//     Load time rather than a silent approximation;
//   - the ByteLevel bytes↔unicode mapping and the BPE model (merges spelled
//     "a b" or ["a","b"], ignore_merges);
//   - for piece tokenizers, BPE from characters with byte_fallback, unk_token
//     and fuse_unk, and the decoder Sequence of Replace "▁" by " ",
//     ByteFallback and Fuse, with Llama 2's Strip of the leading space last
//     (Decode applies it; a StreamDecoder, which decodes a continuation,
//     keeps the space, as vLLM does); the decoder tells the two kinds apart;
//   - the TemplateProcessing post-processor (Llama 3's <|begin_of_text|>,
//     Gemma's <bos>), or, for a folder whose tokenizer_config.json names
//     a class that rebuilds it from add_bos_token and add_eos_token as
//     transformers 4.x loads it (Llama, Code Llama, Gemma, Cohere,
//     GPT-NeoX: config.go), bos_token and eos_token as those flags say;
//   - the ByteLevel decoder, in one piece (Decode) or as a stream that emits
//     only complete UTF-8 characters (StreamDecoder).
//
// Internally every token is kept as its raw bytes rather than its byte-level
// unicode spelling, so encoding never builds the mapped strings. Merges live
// in an open-addressing table keyed by the packed pair (left<<32 | right); a
// pre-token that is itself one token is found by one map lookup; other
// pre-tokens go through the BPE loop (an array scan for short ones, a
// linked list and heap for long ones) and a small lock-free word cache.
//
// Where the reference and the original Rust/Oniguruma implementation differ,
// this package follows the reference: the (?i:'s|…) contractions fold ASCII
// case only (Oniguruma's Unicode case folding may also match U+017F ſ and the Kelvin sign), and \p{L}/\p{N} come from
// Go's Unicode tables (15.0), so letters added in later Unicode versions may
// split differently. single_word on added tokens is ignored, as the
// reference ignores it; Decode applies no clean_up_tokenization_spaces.
// Byte tokens that do not make whole UTF-8 characters decode as the
// reference's TextDecoder reads them (one U+FFFD per maximal invalid
// subpart), where Rust's ByteFallback writes one U+FFFD per token.
// Exceptions, where this package follows Rust: GPT-2's pre-tokenizer
// pattern (ByteLevel with use_regex) takes U+0085 as whitespace and U+FEFF
// as not, as Oniguruma does (the reference's JavaScript \s does the
// opposite, a bug its own source names); and text that equals an added
// token's string only after normalization, or before it for a normalized
// token, stays text (the reference makes it the token).
//
// The reference is Hugging Face's JavaScript tokenizers (@huggingface/tokenizers);
// testdata/tokenizers/golden holds its output for the real Qwen3, Llama 3.1
// and Gemma 3 tokenizer files, and the tests require exact equality of ids
// and text.
// Invalid UTF-8 handed to Encode is first replaced the way a WHATWG TextDecoder
// (and Rust's from_utf8_lossy) does, one U+FFFD per maximal invalid subpart.
//
// Token ids are checked before any table is sized by them: each must be a
// whole number, below twice the file's token count plus 65536 (real
// vocabularies are dense), and no id may stand for two different tokens;
// the error names the token. Added tokens that repeat a vocabulary entry
// with its id, as Hugging Face's files often do, are accepted.
//
// Use: Load a tokenizer folder or file; Encode (added tokens in the text are
// matched; addSpecial adds the post-processor's tokens), EncodeOrdinary (no
// added-token matching, for untrusted text), EncodeWithOffsets (ids and the
// input bytes each covers), EncodeContinuation (a text as it tokenizes
// after earlier text: no Prepend "▁" or prefix space before it); Decode, or a StreamDecoder per generation;
// CheckVocab refuses, by name, a token past the model's vocabulary.
//
// A *Tokenizer is safe for concurrent use (its only mutable parts are the
// word cache, whose slots are swapped atomically, and the table of words
// that are one token, whose entries are set once, atomically).
package tokenizer
