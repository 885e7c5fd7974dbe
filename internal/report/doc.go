// Package report renders a training run into one self-contained HTML page:
// a summary table (run, steps, first and last reward mean, best step, total
// tokens, wall time) and a grid of PNG line plots, embedded as base64 data
// URIs so the page can be mailed or archived as a single file.
//
// Inputs, all optional except the metrics:
//
//   - metrics.jsonl, written by hone-train into adapters/<run>/: one JSON
//     object per step. Every numeric key becomes a series over "step" (or
//     over the 1-based row number when a row has no "step"); other values
//     (strings, bools, nested objects, null) are ignored. A blank, garbled or
//     non-object line, or a step that does not increase, is an error naming
//     file:line.
//
//   - eval files (JSONL), one object per evaluation:
//
//     {"label":"after-grpo","step":40,"accuracy":0.62,"mean_reward":0.41}
//
//     "label" (string, required) names the model or stage evaluated,
//     "step" (integer, optional, default 0) is the training step it belongs
//     to, and every other numeric key is a metric. Each metric gets one plot
//     with one line of points per label, so "before" at step 0 and "after"
//     at the last step read as a jump.
//
//   - trajectory Parquet files (format/trajectory): the reward mean and
//     sample standard deviation per step, computed from the data itself with
//     trajectory.ComputeStats, as a cross-check of the trainer's own
//     reward_mean.
//
// The package only reads and renders; choosing files and writing the page
// atomically is the job of cmd/hone-inspect report.
package report
