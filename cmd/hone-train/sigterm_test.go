package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestSIGTERMSavesFinishedSteps runs hone-train grpo as a process with
// --save-every larger than its steps and sends it SIGTERM (what Kubernetes
// sends a pod it evicts) once it has finished two steps: it exits 130 with
// latest naming the last step it finished, the one its last metrics row
// is of. The steps since the last save were dropped, to be trained again.
func TestSIGTERMSavesFinishedSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess")
	}
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	out := filepath.Join(dir, "adapters")
	cmd := exec.Command(os.Args[0], "grpo", "--model", md, "--run", "term", "--out", out, "--rank", "2", "--threads", "1",
		"--groups-per-step", "1", "--steps", "100000", "--save-every", "1000000", filepath.Join(dir, "s", "a.parquet"))
	cmd.Env = append(os.Environ(), "HONE_TRAIN_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run := &checkpoint.Run{Dir: filepath.Join(out, "term")}
	if !waitfor.Within(2*time.Minute, func() bool { rows, err := run.ReadMetrics(); return err == nil && len(rows) >= 2 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the run never finished two steps:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitInterrupted {
		t.Fatalf("after SIGTERM: %v, want exit code %d\n%s", err, cli.ExitInterrupted, stderr.String())
	}
	rows, err := run.ReadMetrics()
	if err != nil {
		t.Fatal(err)
	}
	last, ok, err := run.Latest()
	if err != nil || !ok || last != len(rows) || last < 2 {
		t.Fatalf("after SIGTERM latest names step %d (%v, %v) and metrics.jsonl has %d rows: want the last finished step saved\n%s",
			last, ok, err, len(rows), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(run.StepDir(last), "adapter_model.safetensors")); err != nil {
		t.Errorf("%s: %v", runfolder.StepName(last), err)
	}
}
