// Package runfolder owns the adapter run folder, the one agreement between
// hone-train, which writes it, and hone-serve (and its vLLM front),
// hone-collect and hone-inspect, which read it:
//
//	ADAPTERS/<run>/             a run folder; <run> obeys the run-name rule (ValidRun)
//	  step-000042/              one folder per saved step (a PEFT adapter and more);
//	                            written zero-padded to 6 digits (StepName), read as
//	                            step- and 1 to 12 digits (ParseStepName)
//	  latest                    "step-000042\n": the step that is current, replaced
//	                            atomically after that step folder is complete
//	                            (WritePointer); a file, not a link, so that it
//	                            survives object stores
//	  metrics.jsonl             one JSON object per trained step
//	  .NAME.tmp-…               what an interrupted atomic write leaves (IsTemp)
//
// A run's current step is the folder latest names, else the highest step
// folder (Locate, which also keeps every symbolic link inside ADAPTERS).
//
// A served model name is "<run>" (the run's current step) or "<run>@<N>",
// N the step as a plain decimal number: "exp@42", never "exp@000042"
// (ServedName, ParseServed). hone-collect records N as the trajectory's step
// (ServedStep).
//
// What a stage does with the folder (train's locking, pruning and resume,
// serve's loading and what it does when a step is refused) stays in the
// stage; the names, the file contents and how the current step is found
// live here.
package runfolder
