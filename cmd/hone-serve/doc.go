// Command hone-serve is Hone's OpenAI-compatible inference server: the
// model folder's own chat template and tokenizer, continuous batching, and
// LoRA adapters picked up from a folder as hone-train writes them. It is
// flags and wiring over package serve; signals, logs and exit codes follow
// cmd/internal/cli. SIGINT/SIGTERM drain: new requests get 503 while those
// in flight finish. With --upstream URL instead of --model it fronts a
// vLLM server (serve/vllm): requests forwarded, adapter steps pushed to
// vLLM's runtime LoRA API. --dtype bfloat16 keeps the model's weights in
// bfloat16 (computed in float32): half the memory, and decoding, which
// reads every weight once a step, faster (Qwen2.5-0.5B shape, servebench:
// 1.8× at one stream, 1.1× at 32).
//
//	hone-serve --model models/qwen2.5-0.5b --adapters runs/adapters --port 8000
//	hone-serve --model models/qwen2.5-0.5b --dtype bfloat16
//	hone-serve --upstream http://127.0.0.1:8001 --adapters "$PWD/runs/adapters"
package main
