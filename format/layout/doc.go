// Package layout turns a conversation into the token sequence a trainer
// consumes: the ids of the whole conversation as the model's own chat
// template renders it, a mask of the tokens the policy produced in its
// trainable assistant turns, and the sampling logprob of each of those
// tokens.
//
// # Method
//
// For each assistant message at index a, the prefix messages[:a] is rendered
// with add_generation_prompt=true (the prompt P the server showed the model
// when it sampled that turn) and messages[:a+1] without it (R). The turn's
// tokens are Encode(R) after Encode(P), or, where the two merge into one
// token across the boundary, the text after P tokenized as its
// continuation (no "▁" that Llama 2's kind puts before a text of its own:
// tokenizer.EncodeContinuation); the policy produced them up to and
// including the first stop token (Options.StopTokens: the model folder's
// ids that end a turn, those serve stops on, e.g. <|im_end|> or Llama 3.2's
// <|eot_id|>, <|eom_id|> and <|end_of_text|>); what follows it (ChatML's
// "\n") is template glue and is context.
//
// When the message carries the token ids the server sampled, those ids are
// used verbatim for the policy's part of the turn, with their logprobs, in
// place of a re-tokenization of the message text. If the sampled ids end with
// a stop token (vLLM includes the EOS token when finish_reason is "stop"),
// that token is trained with its logprob and the template's copy is dropped;
// otherwise (finish_reason "length", or a server that strips the stop token)
// the template's end-of-turn token follows as context, untrained. Without
// sampled ids a trainable turn's stop token is trained unless its
// finish_reason is "length"; logprobs are NaN.
//
// # Sequences and templates that are not prefix-preserving
//
// Turns are appended to one sequence while every prompt extends the tokens
// laid out so far. When it does not — Qwen3 drops the <think> blocks of
// turns before the last user message, sampled ids differ from the template's
// re-rendering of the message, or a tokenization boundary moves — the
// current sequence is closed and a new one starts with the full prompt the
// model saw for that turn (the "flush" of ART's append-only tokenizer). Every
// trainable token is therefore conditioned on exactly the text the model
// was conditioned on when it sampled it, at the cost of repeating the
// prompt. Layout.Sequences holds one or more sequences; none is dropped.
//
// Messages after the last assistant message carry nothing to train and are
// not laid out (ART drops them too).
//
// # Inspecting a model folder
//
// LoadModel reads a model folder's template, tokenizer and stop ids through
// format/modelfolder (FromFolder takes them from a folder already open);
// Model.Render gives the text a conversation renders to (`hone-inspect
// render`), and Model.Layout plus Model.WriteSequence print each token with
// its id, mask and logprob (`hone-inspect render --ids`).
package layout
