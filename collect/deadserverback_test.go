//go:build unix

package collect_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/internal/waitfor"
)

// holdEnv is a stdio environment whose scenario s0 waits in reset, and
// every step waits, until the test opens the FIFO named after it (reset-s0,
// step) for writing; a step first leaves a file "stepping" behind. It
// returns the program's command, for the stdio environment's cmd.
func holdEnv(t *testing.T, dir string) string {
	t.Helper()
	for _, f := range []string{"reset-s0", "step"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "hold.py")
	os.WriteFile(script, []byte(`import sys, json, os
d = sys.argv[1]
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello": r = {"name": "hold", "reward_range": [0, 1]}
    elif op == "scenarios": r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    elif op == "reset":
        if req["scenario"]["id"] == "s0":
            open(os.path.join(d, "reset-s0")).read()
        r = {"messages": [{"role": "user", "content": "go"}]}
    else:
        open(os.path.join(d, "stepping"), "w").close()
        open(os.path.join(d, "step")).read()
        r = {"messages": [], "done": True, "reward": 1}
    print(json.dumps(r), flush=True)
`), 0o644)
	return envtest.Python(t, os.Getenv("CI") != "") + " -S " + script + " " + dir
}

// release opens the FIFO for writing without waiting for a reader: a
// program already gone (its episode cut) is no error here.
func release(fifo string) {
	f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		f.Close()
	}
}

// TestServerBackIsNotUnreachable: a server that answered a call is
// reachable, even when the first group to finish had every episode
// refused (a serving pod restarting as the run began). Group 1's episode
// was answered and is still in its step when group 0's only episode,
// started once the server stopped listening, fails with connection
// refused; the run stopped there with ErrUnreachable, cutting the
// answered episode, as if nothing listened.
func TestServerBackIsNotUnreachable(t *testing.T) {
	dir := t.TempDir()
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "ok"} })
	defer srv.Close()
	// Each answer closes its connection: the next call dials, and is
	// refused once the listener is closed.
	srv.Config.SetKeepAlivesEnabled(false)
	o := collect.Options{
		Env: "stdio", EnvOpts: map[string]string{"cmd": holdEnv(t, dir)},
		Groups: 2, GroupSize: 1, Concurrency: 2, MaxTurns: 4, Seed: 1, Run: "r", Policy: "model", Out: &bytes.Buffer{},
		Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "m", Retries: 0, RequestTimeout: 10 * time.Second},
		// Group 0 finished: let group 1's episode end its step.
		Progress: func(st collect.Stats) {
			if st.Groups == 1 {
				release(filepath.Join(dir, "step"))
			}
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type ran struct {
		st  collect.Stats
		err error
	}
	done := make(chan ran, 1)
	go func() { st, err := runStats(ctx, o); done <- ran{st, err} }()
	if !waitfor.Within(time.Minute, func() bool { _, err := os.Stat(filepath.Join(dir, "stepping")); return err == nil }) {
		t.Fatal("group 1's episode did not reach its step")
	}
	srv.Listener.Close() // the server goes away: new connections are refused
	f, err := os.OpenFile(filepath.Join(dir, "reset-s0"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := <-done
	if r.err != nil || r.st.Episodes != 2 || r.st.Failures != 1 {
		t.Fatalf("%+v, %v; want both episodes played, group 0's failed (connection refused) and group 1's kept, not a stop as unreachable", r.st, r.err)
	}
}
