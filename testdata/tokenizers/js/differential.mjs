// Writes to stdout, as JSON, a seeded corpus of adversarial texts and what
// Hugging Face's JavaScript tokenizers make of them with the real Qwen3,
// Llama 3.1, Llama 2-kind and Gemma 3 tokenizer files: ids with and without
// the post-processor's tokens and the decode of the ids (with and without
// special tokens, and, where the decoder ends with a Strip, as a
// continuation). format/tokenizer's TestDifferentialJS runs it and compares.
//
//   node differential.mjs [SEED [COUNT]]
import { loadTokenizer, models } from "./golden.mjs";

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Every kind of character the pre-tokenizers, normalizers and byte
// fallback treat apart; no lone surrogates (a Go string cannot hold one).
const pools = [
  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "٠١٢٣४५６७Ⅻ½²①",
  " ", "  ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u2028", "\u000b", "\u000c", "\u200b",
  ".,;:!?'\"()[]{}<>/\\|-_=+*&^%$#@~`", "'s'S't'T're'RE've'm'll'LL'd",
  "的一是不了人我在有他这中大来上个国和们", "あいうえおかきくけこアイウエオ", "한국어토크나이저",
  "éèêëàâäôöûüçñßøåæœſKÅ", "\u0301\u0308\u0323\u0307\u0328\u0336", "\u200d\u200c\u200e\u200f\u202e\u202c",
  "😀😂🤖🚀🌍🔥✨👍🏽👨‍👩‍👧‍👦🇩🇪1️⃣", "\u0000\u0001\u0007\u001b\u007f\u0080\u009f",
  "\ufffd\uffff\ufffe\ud7ff\ue000\uf8ff", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢\u{20000}\u{e0041}\u{10ffff}\u{1f9ea}",
  "العربيةעברית", "हिन्दीไทย", "Ελληνικά Русский", "▁", "ﬁｆ",
];
const words = ["<s>", "</s>", "<unk>", "[INST]", "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<|begin_of_text|>",
  "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>",
  "<pad>", "<mask>", "<unused0>", "<0x41>", "<0xE4>", "<|python_tag|>", "<|", "|>", "<|im_", "\n\n\n", "     ",
  "1234567890123", "don't", "DON'T", "x".repeat(300), "\t\t\t"];

function corpus(seed, count) {
  const r = rng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const out = [];
  for (let k = 0; k < count; k++) {
    let s = "";
    if (k % 4 === 3) {
      // A long run mostly from one pool, each pool in turn: long words,
      // long runs of white space, digits or combining marks (more than 30
      // in a row).
      const p1 = Array.from(pools[((k - 3) / 4) % pools.length]), p2 = Array.from(pick(pools));
      const len = 50 + Math.floor(r() * 600);
      for (let i = 0; i < len; i++) s += r() < 0.9 ? pick(p1) : pick(p2);
    } else {
      const len = 1 + Math.floor(r() * 60);
      for (let i = 0; i < len; i++) {
        if (r() < 0.12) s += pick(words);
        else s += pick(Array.from(pick(pools))).repeat(r() < 0.1 ? 1 + Math.floor(r() * 8) : 1);
      }
    }
    out.push(s);
  }
  return out;
}

const seed = Number(process.argv[2] ?? 1);
const count = Number(process.argv[3] ?? 200);
const texts = corpus(seed, count);
const out = {};
for (const key of Object.keys(models)) {
  const { tok, cont } = loadTokenizer(key);
  const opts = (skip) => ({ skip_special_tokens: skip, clean_up_tokenization_spaces: false });
  out[key] = texts.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: true }).ids;
    const c = {
      text,
      ids,
      ids_no_special: tok.encode(text, { add_special_tokens: false }).ids,
      decoded: ids.length === 0 ? "" : tok.decode(ids, opts(false)),
      decoded_skip_special: ids.length === 0 ? "" : tok.decode(ids, opts(true)),
    };
    if (cont !== tok) c.continued = ids.length === 0 ? "" : cont.decode(ids, opts(false));
    return c;
  });
}
process.stdout.write(JSON.stringify(out));
