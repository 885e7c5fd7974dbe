package hone

import (
	"testing"
)

// Input sets and outputs: the rule that turns input arguments into files
// (literal name first, then glob; a folder means its *.parquet files, not
// below it), the one copy of stdin, and the atomic output writer live in
// format/fileset. Everything else opens what it resolved.
func TestContractInputs(t *testing.T) {
	srcs := moduleSources(t)
	home := []string{"format/fileset"}

	// Globs over the files of a model folder, which the user names as a
	// folder, never as a set of inputs: safetensors shards
	// (model-*-of-*.safetensors) and chattemplate's extra templates.
	modelFolder := []string{"format/safetensors", "format/chattemplate", "format/modelfolder"}
	pin(t, callsOutside(srcs, "path/filepath", "Glob", append(home, modelFolder...)),
		home, "input arguments are globbed only by fileset.Resolve")
	pin(t, callsOutside(srcs, "path/filepath", "WalkDir", home), home,
		"an input folder means the files directly in it (fileset.List); nothing walks below it")
	pin(t, callsOutside(srcs, "path/filepath", "Walk", home), home,
		"an input folder means the files directly in it (fileset.List); nothing walks below it")

	// The code that reads inputs lists folders only through fileset.List.
	// (The adapter run folder and the model folder list their own files:
	// serve/adapters, train/checkpoint, format/peft are not input sets.)
	var readers []sourceFile
	for _, sf := range srcs {
		if inAny(sf.rel, []string{"cmd", "collect", "score", "train/grpojob", "train/sft", "internal/report", "format/trajectory"}) {
			readers = append(readers, sf)
		}
	}
	pin(t, callsOutside(readers, "os", "ReadDir", nil), home,
		"input folders are listed by the one directory rule, fileset.List")

	// Standard input is handed over by cmd and copied once, by fileset.
	pin(t, callsOutside(srcs, "os", "Stdin", append([]string{"cmd"}, home...)), home,
		"only cmd hands os.Stdin to fileset.Options.Stdin")

	// Temporary files and renames: fileset's copy of stdin and its atomic
	// writer. The folders other contracts write whole (model weights, PEFT
	// adapters, the run folder and its checkpoints, the tiny test model,
	// a step folder pulled from object storage by format/runfolder's Pull),
	// benchmark scratch files and the tests' compiler cache keep their own.
	ownWriters := []string{"format/safetensors", "format/peft", "format/runfolder", "train/checkpoint", "train/tinymodel", "internal/bench", "kernels/cuda/internal/ccache"}
	pin(t, callsOutside(srcs, "os", "CreateTemp", append(home, ownWriters...)), home,
		"stdin is copied by fileset.Resolve and outputs are written by fileset.Create")
	pin(t, callsOutside(srcs, "os", "Rename", append(home, ownWriters...)), home,
		"an output is renamed into place once, by fileset.Create's Commit")
}
