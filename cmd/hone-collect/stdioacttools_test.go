package main

import (
	"os"
	"path/filepath"
	"testing"
)

// An episode whose reset offers no tools sent its scripted policy's act
// request "tools": null, where docs/stdio-env.md shows a list: a program
// that reads it as one (len(req["tools"]), a for loop) crashed, and every
// episode failed with "the environment exited without answering". act
// now sends [], as reset's payload is null rather than left out.
func TestStdioActToolsIsAList(t *testing.T) {
	py := docPython(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "env.py")
	body := `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello":
        r = {"name": "notools", "policies": ["p"]}
    elif op == "scenarios":
        r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    elif op == "reset":
        r = {"messages": [{"role": "user", "content": "hi"}]}
    elif op == "act":
        r = {"message": {"content": "tools: %d" % len(req["tools"])}}
    else:
        r = {"done": True, "reward": 1}
    print(json.dumps(r), flush=True)
`
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.parquet")
	r := collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" "+script, "--groups", "1", "-G", "1",
		"--policy", "scripted", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	gs := read(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 1 {
		t.Fatalf("groups %+v, want one episode", gs)
	}
	tr := gs[0].Trajectories[0]
	if last := tr.Messages[len(tr.Messages)-1]; tr.Error != "" || last.Role != "assistant" || last.Content != "tools: 0" {
		t.Errorf("episode: error %q, last message %+v; want the policy's \"tools: 0\"", tr.Error, last)
	}
}
