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

	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestInterruptUploadsFinishedGroups: SIGINT during a run writing to an
// object store keeps the whole groups finished before the stop in the
// object, as it does in a local file (TestInterruptProcess): the stage
// commits them after the stop, and the upload went out on the stopped
// run's context, failed at once, and left them in a local hone-unsent-*
// file instead, though the store was up.
func TestInterruptUploadsFinishedGroups(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	out := s3.URL("hone", "runs/o.parquet")
	// As in TestInterruptProcess: the 4th and later resets stall, so one
	// group is whole once the 5th episode has started.
	script := filepath.Join(dir, "stall.py")
	os.WriteFile(script, []byte(`import sys, json, os, time
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello": r = {"name": "stall", "reward_range": [0, 1], "policies": ["wait"]}
    elif op == "scenarios": r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    elif op == "reset":
        n = 1
        while True:
            try:
                os.close(os.open(os.path.join(sys.argv[1], "reset-%d" % n), os.O_CREAT | os.O_EXCL))
                break
            except FileExistsError:
                n += 1
        if n >= 4: time.sleep(3600)
        r = {"messages": [{"role": "user", "content": "go"}]}
    elif op == "act": r = {"message": {"role": "assistant", "content": "ok"}}
    else: r = {"messages": [], "done": True, "reward": 1}
    print(json.dumps(r), flush=True)
`), 0o644)
	resets := filepath.Join(dir, "resets")
	os.Mkdir(resets, 0o755)
	wd := filepath.Join(dir, "wd")
	os.Mkdir(wd, 0o755)
	py := envtest.Python(t, os.Getenv("CI") != "")
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "stdio", "--env-opt", "cmd="+py+" -S "+script+" "+resets,
		"--groups", "400", "-G", "2", "--concurrency", "2", "--policy", "scripted", "-o", out)
	cmd.Dir = wd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitfor.Within(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(resets, "reset-5")); return err == nil }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the 5th episode did not start: %s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(wd, "*hone-unsent*")); len(left) > 0 {
		t.Errorf("kept locally %v though the store was up: %s", left, stderr.String())
	}
	gs := read(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("%d groups in the object, want 1 whole group: %s", len(gs), stderr.String())
	}
}
