// Package demotest runs the demo loop (pipelines/demo.sh) end to end with
// the real binaries, built into a temporary folder, at a tiny size: it
// checks the plumbing (every stage ran, the summary is complete, the
// report is written, the server is gone afterwards), for the default job
// and for another environment, scorer chain and eval metric set through
// the script's variables, not that the model learns — the learning
// figures come from a full `make pipeline` run. Other tests run the
// scripts as users meet them: from outside the checkout, under paths with
// blanks and glob characters, through make, without a tool they need, and
// with a stage that fails (which must say which and why). Each script runs
// in a process group of its own, which a cancelled test stops whole
// (scriptCmd): the server and the stage running must not outlive it.
//
// It also runs the README's "A round by hand" as written (readme_test.go):
// the SFT warm-up and the GRPO rounds must raise the mean reward.
package demotest
