// Package learntest holds the end-to-end GRPO learning test (issue 8): a
// tiny random model, sampled with its KV cache, learns a prompt-dependent
// task through the same library entry point `hone-train grpo --watch-dir`
// uses (train/grpojob.Run), over real Parquet trajectory files. The package has
// no code of its own; see learn_test.go, and block_test.go for the
// tic-tac-toe demo's skill (issue 26): GRPO after an SFT warm-up (sft.Run)
// raises the rate of blocking o's line on held-out boards; bf16_test.go
// runs the first task with bfloat16 weights, computing in float32 and in
// the bf16 compute mode (issue 23), and checks the bf16 reward curve stays
// within the float32 seeds' spread.
package learntest
