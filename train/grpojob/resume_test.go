package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestMain lets the test binary act as a training process for the SIGKILL
// test: with HONE_GRPOJOB_CHILD set to a JSON Options it trains and exits.
func TestMain(m *testing.M) {
	if js := os.Getenv("HONE_GRPOJOB_CHILD"); js != "" {
		var o Options
		if err := json.Unmarshal([]byte(js), &o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		o.Resume = os.Getenv("HONE_GRPOJOB_CHILD_RESUME") != ""
		be, err := cpu.New(cpu.Options{Workers: 1, GEMM: "gonum"})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if err := runWith(context.Background(), be, o, textLog(os.Stderr)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startChild trains o in a subprocess and SIGKILLs it once the run's latest
// step reaches killAt (plus delay), returning the step it was killed after.
func startChild(t *testing.T, o Options, resume bool, killAt int, delay time.Duration) int {
	t.Helper()
	// Normalized, the loss's defaults fill the flags not given (NaN,
	// which JSON cannot hold); the child's Run normalizes again.
	o.Normalize()
	js, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HONE_GRPOJOB_CHILD="+string(js))
	if resume {
		cmd.Env = append(cmd.Env, "HONE_GRPOJOB_CHILD_RESUME=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run := &checkpoint.Run{Dir: filepath.Join(o.Out, o.Name)}
	if !waitfor.Within(60*time.Second, func() bool { n, ok, _ := run.Latest(); return ok && n >= killAt }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child never reached step %d:\n%s", killAt, stderr.String())
	}
	// sleep: on purpose, to move the kill to some point inside the next
	// step (which point does not matter; resuming must give the same run
	// from any of them), not a wait for something to happen.
	time.Sleep(delay)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	n, _, err := run.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if n >= o.Steps {
		t.Fatalf("the child finished (step %d) before the kill; make steps slower", n)
	}
	return n
}

// TestResumeAfterSIGKILLIsBitIdentical trains 8 steps uninterrupted, and
// the same 8 steps in processes killed with SIGKILL mid-run twice and then
// resumed; the final adapter and optimizer files must be byte-identical and
// the metrics file must hold each step once.
func TestResumeAfterSIGKILLIsBitIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocesses")
	}
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, varied)
	o := baseOptions(md, filepath.Join(dir, "adapters"), "ref", in)
	o.Steps, o.TokenBudget = 8, 24
	o.Schedule, o.Warmup = "cosine", 2
	o.Loss.Beta = 0.1

	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	k := o
	k.Name = "killed"
	first := startChild(t, k, false, 2, 0)
	second := startChild(t, k, true, first+2, 3*time.Millisecond)
	t.Logf("killed after steps %d and %d", first, second)
	k.Resume = true
	if err := runWith(context.Background(), backend(t), k, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, f := range []string{"adapter_model.safetensors", checkpoint.OptimizerName} {
		a, err := os.ReadFile(filepath.Join(dir, "adapters", "ref", runfolder.StepName(8), f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "adapters", "killed", runfolder.StepName(8), f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the uninterrupted and the killed-and-resumed run", f)
		}
	}
	rows := readMetrics(t, filepath.Join(dir, "adapters", "killed"))
	if len(rows) != 8 {
		t.Fatalf("%d metrics rows, want 8", len(rows))
	}
	for i, r := range rows {
		if int(r["step"]) != i+1 {
			t.Errorf("metrics row %d is step %v", i, r["step"])
		}
	}
	ref := readMetrics(t, filepath.Join(dir, "adapters", "ref"))
	if ref[7]["loss"] != rows[7]["loss"] || ref[7]["grad_norm"] != rows[7]["grad_norm"] {
		t.Errorf("last step: loss %v / %v, grad norm %v / %v", ref[7]["loss"], rows[7]["loss"], ref[7]["grad_norm"], rows[7]["grad_norm"])
	}
}

// TestWatchSessionKilledIsFinishedOnce kills an incremental session midway;
// the next cron run finishes that session (same steps, same end state as an
// uninterrupted session) and records the file as consumed once.
func TestWatchSessionKilledIsFinishedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocesses")
	}
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := filepath.Join(dir, "scored")
	if err := os.MkdirAll(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	writeGroups(t, md, filepath.Join(watch, "r1.parquet"), 4, 4, varied)
	o := baseOptions(md, filepath.Join(dir, "adapters"), "ref")
	o.WatchDir, o.Epochs, o.TokenBudget = watch, 2, 24 // 4 steps per session
	o.Steps = 4
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	k := o
	k.Name = "killed"
	after := startChild(t, k, true, 1, 0)
	run := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "killed")}
	man, err := run.ReadManifest()
	if err != nil || man.Pending == nil || len(man.Consumed) != 0 {
		t.Fatalf("after the kill at step %d: manifest %+v, %v", after, man, err)
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), k, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "finishing the session") {
		t.Errorf("log %q", log.String())
	}
	man, err = run.ReadManifest()
	if err != nil || man.Pending != nil || len(man.Consumed) != 1 || man.Consumed[0].Step != 4 {
		t.Fatalf("manifest %+v, %v", man, err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "adapters", "ref", runfolder.StepName(4), "adapter_model.safetensors"))
	b, _ := os.ReadFile(filepath.Join(run.StepDir(4), "adapter_model.safetensors"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("the finished session differs from the uninterrupted one")
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), k, textLog(&log)); err != nil || !strings.Contains(log.String(), "nothing new") {
		t.Errorf("third run: %v %q", err, log.String())
	}
}
