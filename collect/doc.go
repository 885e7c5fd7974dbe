// Package collect owns hone-collect's runs: it turns scenarios into groups
// of recorded trajectories. Run plays GroupSize episodes of each scenario
// with a bounded pool of workers, drives each episode through an
// environment (package env and its subpackages) with env.Play, asks the
// policy's OpenAI-compatible endpoint for every assistant turn (Model:
// logprobs and vLLM's return_token_ids, retries with backoff for 429, 5xx,
// timeouts and broken connections) or lets the environment's scripted
// policy play, and writes whole groups in scenario order to a Parquet
// trajectory file. A failed episode is a row with Error set; a stop writes
// every finished group and nothing partial.
package collect
