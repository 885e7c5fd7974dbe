// Command hone-train trains LoRA adapters on trajectory files. For now it has
// one subcommand, init-model, which writes a randomly initialised tiny model
// folder (see train/tinymodel) for tests and demos.
package main
