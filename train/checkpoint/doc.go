// Package checkpoint writes and resumes a training run's folder,
// adapters/<run>/, whose shared layout (step folder names, latest,
// metrics.jsonl, the run-name rule) format/runfolder defines:
//
//	step-000042/          one per saved step, written atomically (temp + rename):
//	  adapter_config.json, adapter_model.safetensors   the PEFT adapter
//	  optimizer.safetensors                            AdamW moments, "<param>.exp_avg"/".exp_avg_sq"
//	  trainer_state.json                               step, optimizer step, the step's metrics row
//	  train_config.json                                the exact options of the run, as JSON
//	latest                "step-000042\n", replaced atomically after the step folder is in place
//	best                  the same for the best step by the chosen metric (when asked)
//	eval.jsonl            eval results by step, "val/reward" and so on (hone-inspect log-eval)
//	metrics.jsonl         one JSON object per step (see train/trainer)
//	manifest.json         input files consumed by incremental runs, with sha256 checksums
//	lock                  flock(2)-held while a run trains, so two runs never overlap
//
// A crash at any point leaves either the previous latest step or the new
// one; a step folder newer than latest (written, but the pointer not yet
// moved) is stale, and a resumed run drops it (DropStepsAfter). So are the
// rows of metrics.jsonl and eval.jsonl of steps after latest
// (RepairMetrics, RepairEval): after a crash, or after latest was moved
// back by hand to redo steps; and a best pointer naming such a step
// (DropBestAfter).
package checkpoint
