// Package judge owns the contract between Hone's scorers and an LLM judge:
// a Request (model, system and user text, the trajectory ids the answer must
// cover), a Verdict (one score in [0,1] with a short explanation per id, and
// the tokens it cost), and the small Judge interface that turns one into the
// other.
//
// Implementations:
//
//   - OpenAI: any OpenAI-compatible chat-completions server (hone-serve,
//     vLLM, a hosted API) through the official openai-go client. It asks for
//     the answer as JSON with a json_schema response format and checks it
//     with Parse. The schema (Schema) keys the scores by trajectory id, so
//     a server that decodes under it (hone-serve, vLLM) can produce each id
//     exactly once; it uses only keywords OpenAI's strict mode accepts,
//     plus an explanation maxLength when SchemaOptions asks for it (off by
//     default: strict mode does not list maxLength). Parse also accepts
//     ART's list form, {"scores": [{"trajectory_id", …}]}, and, as ART's
//     answer model reads them from a judge without structured output, a
//     score written as a string of decimal text ("0.5"; not hex, Inf or
//     NaN) and a list's trajectory_id written as a whole number (1, 1.0).
//   - Fake: an in-memory judge driven by a function, for tests.
//   - Retry: a decorator that repeats a call whose answer was malformed, or
//     whose transport failed in a way worth repeating, a bounded number of
//     times, through internal/retry (the one retry loop, which collect's
//     model calls use too, and its rule of which error answers are final:
//     not hone-serve's 500s for a sequence left with no token to choose),
//     adding up the usage of every attempt. An error answer's Error names
//     its status, the error body's code and the server's message.
//   - Meter: a decorator that adds up calls, cache hits, retries and tokens
//     per judge model, for the run's summary.
//
// The disk cache decorator lives in score/judgecache. Every failure a judge
// reports wraps ErrFailed, so callers can apply their --on-judge-error
// policy to judge failures alone and treat everything else as a bug or bad
// input.
package judge
