package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestMCPServerRestartedMidRun: the example MCP server, made to die (as
// when killed for memory) at one task's call, costs that episode only:
// its row names the loss and the server's stderr, and the later episodes
// run on a new server. Before, every later episode of the run failed
// with "connection closed".
func TestMCPServerRestartedMidRun(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	dir := t.TempDir()
	example, _ := filepath.Abs("../../pipelines/mcp-env-example")
	script := filepath.Join(dir, "dying.py")
	os.WriteFile(script, []byte(`import os, sys
sys.path.insert(0, sys.argv[1])
import server
answer = server.call_tool
def call_tool(name, args):
    if args.get("country") == "Atlantis":
        sys.stderr.write("killed: out of memory\n")
        sys.stderr.flush()
        os._exit(9)
    return answer(name, args)
server.call_tool = call_tool
server.main()
`), 0o644)
	tasks := filepath.Join(dir, "tasks.jsonl")
	example1, _ := os.ReadFile(filepath.Join(example, "tasks.jsonl"))
	lines := strings.SplitN(string(example1), "\n", 3)
	os.WriteFile(tasks, []byte(`{"id":"atlantis","environment":"mcp","payload":{"task":"What is the capital of Atlantis?","answer":"none","solution":{"calls":[{"name":"capital","arguments":{"country":"Atlantis"}}]}}}
`+lines[0]+"\n"+lines[1]+"\n"), 0o644)
	out := filepath.Join(dir, "out.parquet")
	r := collectBin(t, "--scenarios", tasks, "--env-opt", "cmd="+py+" "+script+" "+example,
		"-G", "1", "--concurrency", "1", "--policy", "scripted:replay", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	gs, err := trajectory.ReadFile(context.Background(), out)
	if err != nil || len(gs) != 3 {
		t.Fatalf("%v, %d groups", err, len(gs))
	}
	for _, g := range gs {
		tr := g.Trajectories[0]
		switch tr.ScenarioID {
		case "atlantis":
			if !strings.Contains(tr.Error, "server was lost") || !strings.Contains(tr.Error, "killed: out of memory") {
				t.Errorf("atlantis: error %q; want the server lost, with its stderr", tr.Error)
			}
		default:
			if tr.Error != "" || tr.Reward == nil || *tr.Reward != 1 {
				t.Errorf("%s after the crash: error %q, reward %v", tr.ScenarioID, tr.Error, tr.Reward)
			}
		}
	}
}

// TestMCPRestartWithinStartTimeout: a server lost mid-run whose restart
// never answers its initialize fails the episode that asked for it within
// --start-timeout, even with --episode-timeout 0. Before, the restart had
// no bound but the episode's time, and with none the run waited for ever.
func TestMCPRestartWithinStartTimeout(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	dir := t.TempDir()
	example, _ := filepath.Abs("../../pipelines/mcp-env-example")
	script, starts := filepath.Join(dir, "hanging.py"), filepath.Join(dir, "starts")
	os.WriteFile(script, []byte(`import os, sys, time
sys.path.insert(0, sys.argv[1])
with open(sys.argv[2], "a") as f:
    f.write("start\n")
with open(sys.argv[2]) as f:
    if len(f.readlines()) > 1:
        time.sleep(600)  # the restarted server never answers
import server
answer = server.call_tool
def call_tool(name, args):
    if args.get("country") == "Atlantis":
        os._exit(9)
    return answer(name, args)
server.call_tool = call_tool
server.main()
`), 0o644)
	tasks := filepath.Join(dir, "tasks.jsonl")
	example1, _ := os.ReadFile(filepath.Join(example, "tasks.jsonl"))
	os.WriteFile(tasks, []byte(`{"id":"atlantis","environment":"mcp","payload":{"task":"What is the capital of Atlantis?","answer":"none","solution":{"calls":[{"name":"capital","arguments":{"country":"Atlantis"}}]}}}
`+strings.SplitN(string(example1), "\n", 2)[0]+"\n"), 0o644)
	out := filepath.Join(dir, "out.parquet")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "hone-collect"), "--scenarios", tasks,
		"--env-opt", "cmd="+py+" "+script+" "+example+" "+starts, "-G", "1", "--concurrency", "1",
		"--episode-timeout", "0", "--start-timeout", "2s", "--policy", "scripted:replay", "-o", out)
	msgs, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the run still waited for the restarted server after 30s: %s", msgs)
	}
	// Both episodes failed, which fails the run (exit 1); its rows say why.
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("%v, want exit 1: %s", err, msgs)
	}
	gs, err := trajectory.ReadFile(context.Background(), out)
	if err != nil || len(gs) != 2 {
		t.Fatalf("%v, %d groups", err, len(gs))
	}
	for _, g := range gs {
		if tr := g.Trajectories[0]; tr.ScenarioID != "atlantis" && !strings.Contains(tr.Error, "start timeout 2s") {
			t.Errorf("%s, asking for the restart: error %q; want the start timeout named", tr.ScenarioID, tr.Error)
		}
	}
}
