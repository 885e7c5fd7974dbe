// Package report renders training runs into one self-contained HTML page
// that works offline: a summary per run, the runs' hyperparameters side by
// side, and charts the page draws itself (assets/report.js, our own code:
// SVG with exact tick labels, EMA smoothing, step, training-time, token or
// wall-time x axes, values on hover, runs overlaid one colour each). Charts whose
// every line is flat (KL 0 with beta 0, a constant learning rate) are
// folded into one line each under their section.
//
// Inputs, all optional except each run's metrics:
//
//   - metrics.jsonl, written by hone-train into adapters/<run>/: one JSON
//     object per step. Every numeric key becomes a series over "step" (or
//     over the 1-based row number when a row has no "step"); other values
//     (strings, bools, nested objects, null) are ignored. A blank, garbled or
//     non-object line, or a step that does not increase or is no integer from
//     0 to 2^53, is an error naming
//     file:line; but a garbled last line that no newline ends is a torn
//     append (a run stopped while writing it, or writing it now), left out
//     with a note on the page, as hone-train's resume drops it. Cumulative "seconds" and "tokens" give the training-time
//     and token axes; "time" (Unix seconds when the row was written) gives
//     the wall-time axis, which includes the time between steps.
//
//   - train_config.json of the run's latest step, flattened by
//     FlattenConfig ("loss.beta"); its best_metric and best_mode name the
//     summary's best step, among the run's saved step folders as hone-train
//     picks it (RunInput.Saved).
//
//   - eval.jsonl of the run folder (hone-inspect log-eval), read like
//     metrics.jsonl: eval split metrics ("val/reward") by the step
//     evaluated, drawn as points in the "Eval splits" section.
//
//   - eval files: JSON objects, one a line or pretty-printed one after
//     another (jq's default), or arrays of them:
//
//     {"label":"after-grpo","step":40,"accuracy":0.62,"mean_reward":0.41}
//
//     "label" (string, required) names the model or stage evaluated,
//     "step" (integer from 0 to 2^53, optional, default 0) is the training step it belongs
//     to, "run" (optional) the run whose time and token axes place it (the
//     first run's when it names none on the page, with a note). The
//     numeric keys in settingKeys (temperature, episodes, ...) and string
//     values say how the evaluation ran and go to the table; every other
//     numeric key is a metric with one chart of one line per label.
//
//   - trajectory Parquet files (format/trajectory), read by
//     ReadTrajectories: per step the reward distribution, the mean of each
//     reward component and environment metric, completion length, and the
//     group whose rewards spread widest with its best and worst episode.
//     A file is drawn at the step that trained on it when the run's
//     manifest.json lists it (a file --watch-dir consumed, or one named to
//     a session; the caller matches the files), else at the
//     step of the run's own adapter that sampled it, else at step 0.
//
// The package only reads and renders; choosing files, reading run folders
// and writing the page atomically is the job of cmd/hone-inspect report.
package report
