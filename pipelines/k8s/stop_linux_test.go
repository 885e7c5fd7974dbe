//go:build linux

package k8s

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/gobuild"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestCancelStopsTheWholeStep: a cancelled round stops a step as
// Kubernetes stops its pod, the sh -c and what it started, and Run
// returns at once. Killing only the sh (exec.CommandContext's way) left the
// step's command running, orphaned, holding the output pipe, and Run
// waited the 30 s it ran.
func TestCancelStopsTheWholeStep(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	wf := writeStepWorkflow(t, dir, "", "sleep 30 & "+savePID("$!", pidFile)+"; wait")
	cancel, done := startRun(t, wf)
	pid := waitPID(t, 10*time.Second, "the step's child started", pidFile)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled round returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of the cancel: the step's child still ran")
	}
	// It closed its end of the output pipe as it exited, a moment before
	// the kernel shows it ended.
	if !waitfor.Within(2*time.Second, func() bool { return !running(pid) }) {
		t.Errorf("the step's child %d still runs after Run returned", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// startRun loads the workflow at wf and runs it in the background until
// cancel is called (or the test ends); done says how Run returned.
func startRun(t *testing.T, wf string) (cancel func(), done <-chan error) {
	t.Helper()
	r, err := Load(wf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, Options{}) }()
	return cancel, errc
}

// writeStepWorkflow writes dir/wf.yaml, a workflow of one step that runs
// script under sh -c, its template given podSpecPatch when not empty, and
// returns its path.
func writeStepWorkflow(t *testing.T, dir, podSpecPatch, script string) string {
	t.Helper()
	patch := ""
	if podSpecPatch != "" {
		patch = "\n      podSpecPatch: '" + podSpecPatch + "'"
	}
	doc := `apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: stop
spec:
  entrypoint: step
  templates:
    - name: step` + patch + `
      container:
        command: [sh, -c]
        args: ["` + script + `"]
`
	wf := filepath.Join(dir, "wf.yaml")
	if err := os.WriteFile(wf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return wf
}

// savePID is the shell code that writes the process id in pidVar ($$,
// $!) to file, whole (temp+rename), for waitPID to read.
func savePID(pidVar, file string) string {
	return "echo " + pidVar + " > " + file + ".tmp && mv " + file + ".tmp " + file
}

// waitPID waits up to timeout, as what, for file to hold a process id and
// returns it.
func waitPID(t *testing.T, timeout time.Duration, what, file string) int {
	t.Helper()
	var pid int
	waitfor.Until(t, timeout, what, func() bool {
		b, err := os.ReadFile(file)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// running reports whether process pid exists and is not a zombie (an
// orphan whose end a container's init may never reap).
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // after the command name, which may hold spaces
	return i < 0 || !strings.HasPrefix(s[i:], ") Z")
}

// TestSecondInterruptStopsSteps: a second Ctrl-C to runlocal exits at once
// and still stops the steps it started. They run in process groups of
// their own, which the terminal's Ctrl-C does not reach; this step ignores
// the SIGTERM the first Ctrl-C sends it, and ran on after runlocal exited
// (or runlocal, deaf to the second Ctrl-C, waited out the grace period).
func TestSecondInterruptStopsSteps(t *testing.T) {
	dir := t.TempDir()
	if err := gobuild.Commands(context.Background(), dir, "./runlocal"); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pid")
	wf := writeStepWorkflow(t, dir, "", "trap '' INT TERM; "+savePID("$$", pidFile)+" && exec sleep 600")
	cmd := exec.Command(filepath.Join(dir, "runlocal"), "-f", wf)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := waitPID(t, 30*time.Second, "the step started", pidFile)
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) }) // nothing left behind the test
	// The second signal goes once the first was taken (two at once may
	// arrive as one).
	cmd.Process.Signal(syscall.SIGINT)
	lines := bufio.NewScanner(stderr)
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
		if strings.Contains(lines.Text(), "stopping") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	exited := make(chan error, 1)
	go func() {
		for lines.Scan() {
			said = append(said, lines.Text())
		}
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("runlocal still ran 10 s after the second Ctrl-C: %q", said)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %q", err, said)
	}
	if !waitfor.Within(10*time.Second, func() bool { return !running(pid) }) {
		t.Fatalf("the step %d still runs after runlocal exited: %q", pid, said)
	}
}

// TestFirstInterruptExits130: runlocal stopped by one Ctrl-C stops its
// steps and exits 130, as the hone commands do, not 1 as if a step had
// failed: a script running rounds tells a stop from a failure.
func TestFirstInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	if err := gobuild.Commands(context.Background(), dir, "./runlocal"); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pid")
	wf := writeStepWorkflow(t, dir, "", savePID("$$", pidFile)+" && exec sleep 600")
	cmd := exec.Command(filepath.Join(dir, "runlocal"), "-f", wf)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := waitPID(t, 30*time.Second, "the step started", pidFile)
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130:\n%s", err, out.String())
	}
	if running(pid) {
		t.Errorf("the step %d still runs after runlocal exited", pid)
	}
}

// TestCancelKillsAfterTheTemplatesGrace: a template's podSpecPatch
// terminationGracePeriodSeconds (round.yaml's and cron.yaml's train
// steps take longer than Kubernetes' 30 s to save and upload) is how long
// a cancelled step has before it is killed, on the cluster and here. This
// step ignores the SIGTERM and is given 1 s: Run returns soon after, where
// the default kept it 30 s. Before, Load refused the field.
func TestCancelKillsAfterTheTemplatesGrace(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	wf := writeStepWorkflow(t, dir, `{"terminationGracePeriodSeconds": 1}`, "trap '' TERM; "+savePID("$$", pidFile)+" && exec sleep 600")
	cancel, done := startRun(t, wf)
	pid := waitPID(t, 10*time.Second, "the step started", pidFile)
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) }) // nothing left behind the test
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled round returned no error")
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("the step was killed %v after SIGTERM, before its 1 s grace", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of the cancel: the step's 1 s grace was not honoured")
	}
}
