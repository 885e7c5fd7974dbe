package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// The signal tests run this test binary again as a small stage program:
// TestMain turns into helperMain when HONE_CLI_HELPER is set.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HONE_CLI_HELPER"); mode != "" {
		helperMain(mode, os.Getenv("HONE_CLI_OUT"))
		return
	}
	os.Exit(m.Run())
}

// helperMain writes part of an output through OpenOutput, says "ready"
// on stdout, and then either waits for cancellation ("write") or ignores it
// ("hang"), so that only a second signal ends it.
func helperMain(mode, out string) {
	Main("helper", func(ctx context.Context) error {
		f, err := OpenOutput(ctx, out, os.Stdout, true)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write([]byte("first group, not yet complete")); err != nil {
			return err
		}
		fmt.Println("ready")
		if mode == "hang" {
			time.Sleep(time.Minute) // sleep: a clean-up that hangs, the subject of the test
		}
		<-ctx.Done()
		return fmt.Errorf("write second group: %w", context.Cause(ctx))
	})
}

func startHelper(t *testing.T, mode, out string) (*exec.Cmd, *os.File) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT to other processes on windows")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HONE_CLI_HELPER="+mode, "HONE_CLI_OUT="+out)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper did not get ready: %q, %v", line, err)
	}
	return cmd, stderr
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		t.Fatal("helper did not exit after the signal")
		return -1
	}
}

func TestSIGINTExits130AndLeavesNothingPartial(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.parquet")
			if err := os.WriteFile(out, []byte("earlier output"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd, stderr := startHelper(t, "write", out)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd); code != ExitInterrupted {
				msg, _ := os.ReadFile(stderr.Name())
				t.Fatalf("exit code %d, want 130; stderr:\n%s", code, msg)
			}
			if got, _ := os.ReadFile(out); string(got) != "earlier output" {
				t.Errorf("earlier output changed to %q", got)
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("partial or temporary files left: %q", names)
			}
			msg, _ := os.ReadFile(stderr.Name())
			if want := "helper: interrupted"; !strings.Contains(string(msg), want) {
				t.Errorf("stderr %q lacks %q", msg, want)
			}
		})
	}
}

func TestSecondSIGINTExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	cmd, stderr := startHelper(t, "hang", filepath.Join(dir, "out.parquet"))
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	waitfor.Until(t, 10*time.Second, "the first signal's notice", func() bool {
		msg, _ := os.ReadFile(stderr.Name())
		return strings.Contains(string(msg), "stopping")
	})
	cmd.Process.Signal(syscall.SIGINT)
	if code := waitExit(t, cmd); code != ExitInterrupted {
		msg, _ := os.ReadFile(stderr.Name())
		t.Fatalf("exit code %d, want 130; stderr:\n%s", code, msg)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to exit after the second signal", d)
	}
	msg, _ := os.ReadFile(stderr.Name())
	if !strings.Contains(string(msg), "exiting without clean-up") {
		t.Errorf("stderr %q does not say it skipped clean-up", msg)
	}
}

// A stage killed with SIGKILL (the OOM killer, a lost node) cannot remove
// its temporary file: each kill left the partial output, as large as it
// had grown, beside the target for good. The next run writing the same
// output removes it, and never the file of a writer still running.
func TestSIGKILLedOutputTempRemovedByNextRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.parquet")
	cmd, _ := startHelper(t, "write", out)
	write := func(text string) {
		t.Helper()
		err := WriteOutput(context.Background(), out, os.Stdout, true, func(w io.Writer) error {
			_, err := w.Write([]byte(text))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write("while the other writer runs")
	if names := dirNames(t, dir); len(names) != 2 {
		t.Fatalf("with a writer running the folder holds %q, want the output and that writer's temporary file", names)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd)
	if names := dirNames(t, dir); len(names) != 2 {
		t.Fatalf("after the kill the folder holds %q, want the output and the killed writer's temporary file", names)
	}
	write("after the kill")
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("the next run left %q, want only the output", names)
	}
	if got, _ := os.ReadFile(out); string(got) != "after the kill" {
		t.Errorf("output %q", got)
	}
}
