// Package learntest holds the end-to-end GRPO learning test (issue 8): a
// tiny random model, sampled with its KV cache, learns a prompt-dependent
// task through the same library entry point `hone-train grpo --watch-dir`
// uses (train/grpojob.Run), over real Parquet trajectory files. The package has
// no code of its own; see learn_test.go.
package learntest
