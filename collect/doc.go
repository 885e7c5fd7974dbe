// Package collect owns hone-collect's runs: it turns scenarios into groups
// of recorded trajectories. Run plays GroupSize episodes of each scenario
// with a bounded pool of workers, drives each episode through an
// environment (package env and its subpackages) with env.Play, asks the
// policy's OpenAI-compatible endpoint for every assistant turn (Model:
// logprobs and vLLM's return_token_ids, or where an answer lacks
// token_ids the ids its logprobs tokens name under vLLM's older
// return_tokens_as_token_ids; retries with backoff for 429, 5xx,
// timeouts and broken connections, but not for hone-serve's 500s that the
// same request cannot get past, NaN logits from a diverged adapter among
// them; a failed call's error carries the server's message) or lets the
// environment's scripted policy play, and writes whole groups in scenario
// order to a Parquet trajectory file. A failed episode is a row with Error set; a stop writes
// every finished group and nothing partial. GenerateTasks (hone-collect
// scenarios) has a model write MCP tasks, as ART's generate_scenarios.
//
// Chat template kwargs (--chat-template-kwargs, Qwen3's
// {"enable_thinking":false}) go on every model call as
// chat_template_kwargs, and every row of a model-played episode records
// them under trajectory.MetadataKeyChatTemplateKwargs: they change the
// prompt the model saw, and hone-train lays the row out under them.
//
// Failures are loud but lose nothing. By default a run never stops early
// for failed episodes (ART, by contrast, aborts on the first exception),
// but when it ends with every episode failed Run returns ErrAllFailed,
// naming the most common error, and hone-collect exits 1. MaxFailures
// (--max-failures, a count or a fraction of all episodes) stops the run
// once more episodes failed than it allows, with ErrTooManyFailures (exit
// 1). In both cases the finished groups are written, failed episodes as
// rows with their error, and the Stats handed to Options.Summary count
// exactly the rows written (and, apart, the episodes of groups a stop left
// unfinished). One failure stops a run at once: a model call
// answered 404 (model_not_found, or a base URL without the endpoint)
// before any call was answered, which every other call would meet too;
// Run returns ErrModelNotFound, naming the models the server lists, and
// hone-collect keeps no output. Once a call was answered, a 404 is a
// server between two loads of the adapter (vLLM restarted under
// hone-serve's front, a step folder loaded again) and fails its episode
// only. A 400 to a call before any was answered, for a --max-tokens over
// the server's cap on it or a completion that fills the model's context
// alone, which every call asks for, stops the run at once too: Run
// returns ErrMaxTokensOverCap, naming the flag and the cap, and
// hone-collect keeps no output. A context refusal that depends on the
// prompt (one of the prompt alone, or of a completion below the context,
// as after a server's clamp to max_new_tokens), or comes after the first
// turn, stays its episode's. Without MaxFailures, a server that refused every connection of
// the first group's episodes, or whose host name did not resolve for
// any of them, none succeeding and no call answered,
// stops the run with ErrUnreachable once that group finished, and
// hone-collect keeps no output: each later episode would spend its
// retries the same way.
//
// Like every stage, the package exposes Options (AddFlags) and
// Run(ctx, opts) error; it reads no environment variable (cmd/hone-collect
// fills the endpoint and key from $OPENAI_BASE_URL and $OPENAI_API_KEY),
// marks its errors with internal/stageerr's kinds, and retries model calls
// through internal/retry.
package collect
