package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// TestResumeNotesBackendChanges: --device, --compute and --threads are
// saved in the run's config; a resume with another of them trains (moving
// a run to another machine is legitimate) and says on stderr which one
// changed, since the steps from there may round differently (OpenBLAS sums
// in another order with another thread count). A run saved before these
// keys resumes as before, saying nothing. They used to be left out of the
// config, so a changed one went unnoticed.
func TestResumeNotesBackendChanges(t *testing.T) {
	dir := t.TempDir()
	scored := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, scored, "r1")
	in := filepath.Join(scored, "r1.parquet")
	out := filepath.Join(dir, "adapters")
	grpo := func(extra ...string) string {
		t.Helper()
		args := append([]string{"grpo", "--model", md, "--run", "moved", "--out", out, "--rank", "2"}, extra...)
		code, msg := runMain(t, append(args, in)...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", args, code, msg)
		}
		return msg
	}
	ck := &checkpoint.Run{Dir: filepath.Join(out, "moved")}
	config := func(step int) map[string]any {
		t.Helper()
		b, err := ck.ReadConfig(step)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	const note = "another backend configuration"

	grpo("--threads", "1", "--steps", "1")
	if c := config(1); c["device"] != "cpu" || c["compute"] != "f32" || c["threads"] != 1.0 {
		t.Errorf("saved config has device %v, compute %v, threads %v; want cpu, f32, 1", c["device"], c["compute"], c["threads"])
	}
	if msg := grpo("--resume", "--threads", "1", "--steps", "2"); strings.Contains(msg, note) {
		t.Errorf("a resume on the same backend configuration noted a change:\n%s", msg)
	}
	msg := grpo("--resume", "--threads", "2", "--steps", "3")
	if !strings.Contains(msg, note) || !strings.Contains(msg, "option=threads run_has=1 command_gives=2") {
		t.Errorf("a resume with --threads 2 after 1 does not say so:\n%s", msg)
	}
	if c := config(3); c["threads"] != 2.0 {
		t.Errorf("step 3's config has threads %v, want 2 (what it was trained with)", c["threads"])
	}

	// A run saved before the keys: nothing is known, nothing is said.
	p := filepath.Join(ck.StepDir(3), checkpoint.ConfigName)
	c := config(3)
	delete(c, "device")
	delete(c, "compute")
	delete(c, "threads")
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := grpo("--resume", "--threads", "1", "--steps", "4"); strings.Contains(msg, note) {
		t.Errorf("a run saved without the backend keys noted a change:\n%s", msg)
	}
}
