package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestKilledCollectorTakesEnvProgramAlong: hone-collect killed with
// SIGKILL, which runs no clean-up, still ends the environment program it
// started (the kernel sends it the parent-death signal). The episode's
// program here never answers its reset, and ran on, orphaned, once the
// collector was gone.
func TestKilledCollectorTakesEnvProgramAlong(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "env.sh")
	os.WriteFile(script, []byte(`read line
case "$line" in
*hello*) echo '{"name":"hang","policies":["wait"]}'; exit 0 ;;
*scenarios*) echo '{"scenarios":[{"id":"s1"}]}'; exit 0 ;;
esac
echo $$ > `+pidFile+`.tmp && mv `+pidFile+`.tmp `+pidFile+`
exec sleep 600
`), 0o644)
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "stdio", "--env-opt", "cmd=sh "+script,
		"--groups", "1", "-G", "1", "--policy", "scripted", "-o", filepath.Join(dir, "o.parquet"))
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
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) }) // nothing left behind the test, whatever the outcome
	cmd.Process.Kill()
	cmd.Wait()
	if !waitfor.Within(10*time.Second, func() bool { return envtest.Gone(pid) }) {
		t.Fatalf("the environment program %d still runs after hone-collect was killed", pid)
	}
}
