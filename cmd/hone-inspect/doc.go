// Command hone-inspect looks into Hone trajectory files: their schema and
// metadata, the first rows, summary statistics, validation, conversion to
// and from JSON Lines, and merging several files into one; log-eval records
// an eval split's episodes (val/reward, …) in a training run. It also checks
// a Hugging Face model folder before training on it: tokenize turns text
// into token ids and back, render shows what the chat template makes of a
// conversation and, with --ids, the token ids and training mask.
//
//	hone-inspect schema runs/r1/*.parquet
//	hone-inspect head -n 3 scored.parquet
//	hone-inspect stats runs/r1/
//	hone-inspect validate runs/r1/
//	hone-inspect to-jsonl scored.parquet > scored.jsonl
//	hone-inspect from-jsonl -o imported.parquet chats.jsonl
//	hone-inspect cat -o all.parquet runs/r1/ runs/r2/
//	hone-inspect log-eval --run adapters/rl val/rl-3.parquet
//	printf 'Hello' | hone-inspect tokenize --model ~/models/Qwen3-1.7B
//	hone-inspect render --model ~/models/Qwen3-1.7B --ids < conversation.json
//
// Inputs are files, globs, directories of *.parquet files, file:// or
// object-store URLs (s3://…), or - for stdin.
// Output goes to -o PATH (written to a temporary name and renamed) or to
// stdout, but Parquet is never written to a terminal. Exit codes: 0 ok,
// 1 failure, 2 bad usage or bad input, 130 interrupted.
//
// Each subcommand is one file: flags and wiring over format/trajectory,
// format/layout, format/tokenizer and cmd/internal/cli.
package main
