// Package serve is hone-serve: an OpenAI-compatible HTTP server over
// train/model, with continuous batching (serve/engine) and LoRA adapters
// hot-reloaded from a folder (serve/adapters).
//
// Endpoints: POST /v1/chat/completions (messages rendered with the model's
// own chat template, tools and tool_choice, n, logprobs/top_logprobs,
// vLLM's return_token_ids → prompt_token_ids and choices[].token_ids,
// vLLM's return_tokens_as_token_ids → every logprobs token written as
// "token_id:<id>" (chat: content[].token and top_logprobs[].token, whose
// bytes are then those of that string, while the sampled token's bytes
// stay its text's, as vLLM writes them; completions: tokens and the
// top_logprobs keys, text_offset then counting those strings in a whole
// answer and the text in a stream, as vLLM does; Hone's text_offset counts
// bytes where vLLM's Python len counts characters, which differ for
// non-ASCII text; prompt_logprobs' decoded_token stays the token's text,
// as vLLM's does),
// streaming with stream_options.include_usage, and vLLM's
// continuous_usage_stats: the usage so far in every chunk, cached tokens in
// the last usage chunk only, as vLLM), POST /v1/completions
// (prompt text or token ids; response_format as on chat; echo gives a text prompt back as sent, without
// the BOS token the tokenizer may add, as vLLM does; echo with logprobs
// returns the prompt's token logprobs, the way to score a given text, its
// tokens BOS included), GET /v1/models (the base model,
// every <run> and <run>@<step> loaded, each with vLLM's max_model_len), GET /health and GET /metrics
// (Prometheus text format, written by hand).
//
// Errors use OpenAI's error object: 400 bad request, 401 wrong or missing
// API key, 404 unknown model, 408 a body that stopped coming before the
// request deadline, 413 body too large, 429 queue full (its
// bound, --max-queue, counts sequences: a request adds its n, and the 429
// says how many wait; a request that scores its prompt, an echo with
// logprobs or one with prompt_logprobs, is refused before the scoring), 503
// shutting down, 504 past the request deadline (--request-timeout from
// the request's arrival, chat template rendering included); 500 with code
// logits_not_finite or constraint_no_token for a sequence left with no
// token to choose (Server.noCandidate: the model's logits NaN, as from a
// diverged adapter, or a constraint that allowed nothing), sent mid-stream
// as an error event like every error after a stream's 200. A 429 carries
// Retry-After: 1 (a place in the queue frees within a decoding step or
// two), a 503 Retry-After: 5 (the server is being restarted or replaced).
// A 400 names the JSON field at fault with its array indices and says which
// JSON type it wants ("messages[1].content: expected a string or an array
// of content parts, got a number"); a body that is not valid UTF-8, a
// message role other than OpenAI's (system, developer, user, assistant,
// tool, function), content of another shape, "tools": [] and a body
// whose Content-Type names another media type than application/json (none
// is read as JSON) are 400s too, as in vLLM, and so are
// the completions' suffix and a best_of other than 1 or n, which this
// server does not implement (as vLLM refuses them) rather than ignore. A
// \ud800-style escape of a lone surrogate decodes to U+FFFD, as in
// encoding/json. logit_bias (token ids as strings, each to a bias in
// [−100, 100]) is added to the logits before the choice; the logprobs
// reported stay the raw model's, as with the penalties. vLLM's
// repetition_penalty (above 0; 1: off) divides the positive logits, and
// multiplies the others, of every token in the prompt or the output so
// far, after logit_bias as in vLLM; presence_penalty and frequency_penalty
// (−2 to 2) subtract from the logit of every token in the output, once
// and per occurrence. vLLM's min_p (0
// to 1) keeps, after temperature and before top_k and top_p, only the
// tokens at least min_p times as likely as the best one. vLLM's min_tokens
// (0 to max_tokens) keeps the model's end-of-sequence ids (under
// ignore_eos too, as vLLM does) and stop_token_ids out of the choice, and
// stop strings from ending, within the first min_tokens tokens (a 400
// with response_format or a forced tool call, whose complete document
// allows only its end). A stop string ends
// a choice's text before it (of several found in a token's text, the first
// listed, as vLLM checks them in order), or with vLLM's include_stop_str_in_output
// after it (a stop token's text then kept too, so that the text is that
// of all of token_ids, and whole: a stop token ends the choice before its
// text is searched for stop strings, as in vLLM's detokenizer); the tokens
// that made it stay in token_ids and the
// logprobs either way, as in vLLM. vLLM's allowed_token_ids (ids in the
// vocabulary, at least one) keeps every other token out of the choice;
// its bad_words bans, for each word's tokens (without its leading spaces,
// and after one space when that changes only the first token, as vLLM
// tokenizes them), the last token wherever the output so far ends with
// the ones before it (looked up from the output's last tokens, so that a
// step costs the prefixes that match, not the number of words: the
// engine steps every request). Both mask after the penalties and before min_p,
// top_k and top_p, the logprobs staying the raw model's; a row they leave
// without a token is the 500 of code constraint_no_token, except a first
// token that the request's fields alone leave none (allowed_token_ids all
// held back by min_tokens, banned by bad_words, or unable to begin
// response_format's or a forced call's output): that is a 400 naming
// allowed_token_ids and the clashing field, before any generation. Content sent as a
// list of content parts reaches a chat template that loops over a
// message's content (Gemma 3's) as the list, and any other (Qwen's and
// Llama's take content as a string) as its text parts joined by newlines,
// as vLLM's "auto" content format decides (format/chattemplate); a part
// that is not text (an image_url, input_audio or file part) is a 400
// naming it, since the models served here take text only. vLLM's
// continue_final_message renders the conversation without a generation
// prompt and ends the prompt right after the last message's text (its last
// text part), cut where transformers cuts it, so that the model continues
// that message (an assistant prefill); it needs add_generation_prompt
// false, since that is true unless sent (a 400 otherwise, as in vLLM).
// vLLM's echo for chat begins each choice's content with the last
// message's when that is the assistant's (the whole turn, with
// continue_final_message) or, with add_generation_prompt false, whatever
// its role, streamed in the first chunk. As in vLLM, the answer's role
// (message.role, the first delta's role) is the assistant's after the
// generation prompt, and with add_generation_prompt false the last
// message's, which the answer continues.
// vLLM's add_special_tokens has the tokenizer add its special tokens (a
// BOS) to the prompt: false unless sent for chat, whose template writes
// them, true for completions. use_beam_search true is a 400 (this server
// samples); length_penalty, which only beam search reads, changes nothing.
// vLLM's priority other than 0 is a 400 in vLLM's words ("Got priority 1
// but Priority scheduling is not enabled."): requests are served first come
// first served, vLLM's default --scheduling-policy.
// vLLM's guided decoding (guided_json, guided_choice, guided_regex,
// guided_grammar, structured_outputs) is a 400 naming the field, not an
// unconstrained answer; response_format json_schema constrains, on chat
// and on completions alike. A chat template sent with the request
// (vLLM's chat_template, or chat_template_kwargs' chat_template) is a 400
// naming the field, as vLLM refuses it without
// --trust-request-chat-template: the model's own template is the only one
// rendered. So is a non-empty logits_processors (vLLM's, without its
// --logits-processor-pattern): no Python processor runs here.
// vLLM's prompt_logprobs k (0 to 20) gives, for each prompt token after
// the first, its logprob, rank and text and those of the k most likely
// tokens, as vLLM shapes them (null, then maps from token id; completions
// in each choice, chat in the response), from the forward that scores an
// echo's prompt; with stream only 0 passes. Fields the server does not
// read (vLLM's spaces_between_special_tokens, say) are
// answered without, and named in the X-Hone-Warning header ("fields
// ignored: spaces_between_special_tokens"; past 8 of them, the first 8 and the count) and,
// once per field for the first 64 names, in the log, as vLLM logs them.
//
// As in vLLM, temperature 0 (below its 1e-5) is greedy and a temperature
// above 0 and below 0.01 samples at 0.01, which vLLM raises it to.
//
// Sampling fields a request leaves out are, by default, temperature 1 with
// no top_p, top_k, min_p or repetition penalty: --generation-config vllm,
// as ART starts its vLLM server, since rollouts for RL sample the model
// itself. With --generation-config auto (vLLM's own default) they take the
// model folder's generation_config.json values of temperature, top_p,
// top_k, min_p and repetition_penalty (those other than transformers'
// defaults: a top_k of 50 is not read), and its max_new_tokens is
// max_tokens' default and cap (a request asking for more gets that many,
// as from vLLM); the start's log names them. --generation-config with a
// folder's path reads them, so, from that folder's generation_config.json
// instead (refused at start when it has none).
//
// vLLM's truncate_prompt_tokens k keeps the prompt's last k tokens (a text
// prompt's, a token-id prompt's, a chat's rendered prompt's; a BOS the
// tokenizer puts first stays, counted in k, as Hugging Face's tokenizer
// truncates; -1: the model's context), so that a prompt longer than the
// context is answered from its end; a k over the context, 0 or below -1 is
// a 400. A prompt over the model's context is a 400 with code
// "context_length_exceeded" in vLLM's words ("This model's maximum context
// length is N tokens. However, your request has (at least) M input
// tokens…"). It is found without tokenizing more than the context: a text
// longer than the context's worth of the longest token is refused by its
// length alone, and any other is tokenized only until the count passes the
// context (format/tokenizer's Limited), so a large body costs neither the
// time nor the memory of its tokens. A prompt that fits but leaves less
// room than max_tokens (or max_completion_tokens) asks for is the same 400,
// param naming that field ("…However, you requested T tokens (P in the
// prompt, C in the completion)…"). A request that leaves max_tokens out
// gets the server's --max-tokens, within the context left and within what
// the KV cache budget holds for its n choices. A request over that budget
// is a 400 naming what to lower: the prompt when it leaves no room for a
// completion token, n when one choice would fit, else max_tokens.
//
// Tool calls are parsed from the output text: Hermes/Qwen
// <tool_call>{json}</tool_call> blocks and Llama 3.1 JSON
// {"name":…,"parameters":…}; found calls become message.tool_calls with
// finish_reason "tool_calls" (a call forced by a named tool_choice keeps
// "stop", as OpenAI's API and vLLM report it). A streamed choice with tools in play is sent
// whole at its end, since only the complete text tells a call from content.
// A model whose template shows no tool-call markup cannot be asked for
// calls: a request with tools is answered (expect plain text) with an
// X-Hone-Warning header saying so (and a warning logged once per model),
// and tool_choice "required" or a named function is a 400 with code
// tools_unsupported.
//
// response_format json_object / json_schema is enforced by constrained
// decoding (serve/constrain through serve/engine's Constraint seam): tokens
// that cannot continue a valid document are masked, so a finished output
// always parses; each JSON constraint gets the request's max_tokens, so
// with max_tokens above the schema's shortest document every choice ends
// "stop" with a complete document, and below it the choice is cut and
// ends "length" (no error, as with OpenAI). When the model gives -Inf to
// every token that could continue the document, the request fails with
// the 500 of code constraint_no_token. tool_choice "required" or a named function forces the
// output to be one call in the template's own markup (Hermes <tool_call> or
// Llama JSON): for "required", of any offered function, whose arguments
// follow the parameters of the function the call names (vLLM's anyOf over
// the tools). A function's arguments follow its parameter schema when
// constrain supports the schema and it allows only objects; otherwise they
// are any JSON object, unless the function says "strict": true, which asks
// for the schema to be followed exactly: then the request is a 400 on
// tools naming the function and the keyword constrain lacks. Calls under
// tool_choice "auto" are not constrained (as in vLLM), strict or not.
//
// Prefix caching is on by default, as in vLLM (--no-enable-prefix-caching
// turns it off): the KV rows of finished requests are kept within
// --kv-cache-bytes, so the next turn of a conversation prefills only what
// is new, and requests that arrive together with the same beginning
// prefill it once; usage.prompt_tokens_details.cached_tokens says how many prompt
// tokens came from the cache, and /metrics counts them. Rows kept for an
// adapter step are freed once the step is dropped and its last request
// ended. As with chunked
// prefill, a prompt computed partly from cached rows gets logprobs that
// can differ from a cold run's in their last digits (the CPU GEMM over
// fewer rows rounds differently); turn the cache off where repeated runs
// must agree to the bit.
//
// Each response's model field names what answered: the base model's name
// or "<run>@<step>". A request keeps the adapter it resolved at admission
// even when a newer step is loaded meanwhile.
//
// With Options.Upstream (--upstream URL) Run serves serve/vllm's front
// instead: every request forwarded to that vLLM server and each new adapter
// step loaded into it through vLLM's runtime LoRA API; no model is loaded.
//
// Options/AddFlags/Run are the command's surface; cmd/hone-serve is a thin
// main over them. The server binds 127.0.0.1 unless told otherwise.
package serve
