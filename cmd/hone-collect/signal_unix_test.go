//go:build unix

package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestSecondInterruptStopsEnvPrograms: a second Ctrl-C, which exits at
// once without the clean-up the first one started, still stops the
// environment programs hone-collect started. They run in process groups
// of their own, which the terminal's Ctrl-C does not reach: the episode's
// program here ignores SIGINT and SIGTERM and never answers its reset,
// and was left running after hone-collect exited.
func TestSecondInterruptStopsEnvPrograms(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "env.sh")
	os.WriteFile(script, []byte(`read line
case "$line" in
*hello*) echo '{"name":"hang","policies":["wait"]}'; exit 0 ;;
*scenarios*) echo '{"scenarios":[{"id":"s1"}]}'; exit 0 ;;
esac
trap '' INT TERM
echo $$ > `+pidFile+`.tmp && mv `+pidFile+`.tmp `+pidFile+`
exec sleep 600
`), 0o644)
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "stdio", "--env-opt", "cmd=sh "+script,
		"--groups", "1", "-G", "1", "--policy", "scripted", "-o", filepath.Join(dir, "o.parquet"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pid int
	if !waitfor.Within(60*time.Second, func() bool {
		pid = envtest.ReadPID(pidFile)
		return pid > 0
	}) {
		t.Fatal("the episode's program did not start")
	}
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) }) // whatever the outcome, nothing left behind the test
	// The second signal is sent once the first was taken (two sent at
	// once may arrive as one), while the first's clean-up still waits for
	// the program to exit.
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
	for lines.Scan() {
		said = append(said, lines.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %q", err, said)
	}
	if !strings.Contains(strings.Join(said, "\n"), "again") {
		t.Fatalf("the second signal was not the one that ended it: %q", said)
	}
	if !waitfor.Within(10*time.Second, func() bool { return envtest.Gone(pid) }) {
		t.Fatalf("the environment program %d still runs after hone-collect exited: %q", pid, said)
	}
}

// TestMCPStartTimeout: an MCP server that never answers initialize fails
// hone-collect scenarios after --start-timeout, as it fails --env mcp,
// naming the flag, and the server is stopped; scenarios waited for it
// forever.
func TestMCPStartTimeout(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"scenarios", []string{"scenarios", "--model", "gen", "--base-url", "http://127.0.0.1:1/v1", "--mcp-cmd"}},
		{"env", []string{"--env", "mcp", "--groups", "1", "--policy", "scripted", "--env-opt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			server := "sh -c 'echo $$ > " + pidFile + ".tmp && mv " + pidFile + ".tmp " + pidFile + " && exec sleep 600'"
			if c.name == "env" {
				server = "cmd=" + server
			}
			args := append(c.args, server, "--start-timeout", "1s", "-o", filepath.Join(dir, "out"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "hone-collect"), args...)
			out, err := cmd.CombinedOutput()
			pid := envtest.ReadPID(pidFile)
			if pid > 0 {
				t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
			}
			if ctx.Err() != nil {
				t.Fatalf("still waiting for the server after 30s: %s", out)
			}
			if err == nil || !strings.Contains(string(out), "no answer within --start-timeout 1s") {
				t.Fatalf("%v: %s; want a failure naming --start-timeout", err, out)
			}
			if pid == 0 || !waitfor.Within(10*time.Second, func() bool { return envtest.Gone(pid) }) {
				t.Errorf("the server (pid %d) still runs: %s", pid, out)
			}
		})
	}
}
