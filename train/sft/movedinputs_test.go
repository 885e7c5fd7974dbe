package sft

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/spf13/pflag"
)

// TestResumeOnMovedInputs: a run keeps its inputs' sha256, so a resume on
// the same contents under another path (the data folder moved, mounted
// elsewhere in a container) trains what the run trained, as grpo takes a
// session's files by sha256 whatever their names. It was refused as a
// changed option ("inputs" differs) though inputs_sha256 was equal. The
// resumed run ends bit-identical to an uninterrupted one; other contents
// under the moved path are still refused (TestResumeRefusesChangedInputs).
func TestResumeOnMovedInputs(t *testing.T) {
	dir, md, data := setup(t)
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	run := func(name, in string, steps int, resume bool) error {
		var o Options
		o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
		o.Model, o.Out, o.Name, o.Inputs = md, dir, name, fileset.Files(in)
		o.Rank, o.Steps, o.BatchSize, o.Resume, o.Backend = 4, steps, 2, resume, be
		return Run(context.Background(), o)
	}
	if err := run("whole", data, 2, false); err != nil {
		t.Fatal(err)
	}
	if err := run("moved", data, 1, false); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "elsewhere", "chats.jsonl")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data, moved); err != nil {
		t.Fatal(err)
	}
	if err := run("moved", moved, 2, true); err != nil {
		t.Fatalf("resume on the same contents, moved: %v", err)
	}
	adapter := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join((&checkpoint.Run{Dir: filepath.Join(dir, name)}).StepDir(2), "adapter_model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(adapter("whole"), adapter("moved")) {
		t.Error("the run resumed on the moved file ends other than the uninterrupted run")
	}
}
