// Package demotest runs the demo loop (pipelines/demo.sh) end to end with
// the real binaries, built into a temporary folder, at a tiny size: it
// checks the plumbing (every stage ran, the summary is complete, the
// server is gone afterwards), not that the model learns — the learning
// figures come from a full `make pipeline` run.
package demotest
