package mcpenv_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/format/trajectory"
)

// calls is a policy that calls tool with args once, then answers with
// the tool's result.
func calls(tool, args string) env.PolicyFunc {
	return func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
		if last := msgs[len(msgs)-1]; last.Role == "tool" {
			return env.Assistant("The answer is " + last.Content), nil
		}
		return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: tool, Arguments: args}}}, nil
	}
}

// startServer opens a stdio server of the test binary in mode, returning
// the file its starts are counted in.
func startServer(t *testing.T, mode string) (*mcpenv.Env, string) {
	t.Helper()
	t.Setenv("HONE_MCP_TEST_SERVER", mode)
	starts := filepath.Join(t.TempDir(), "starts")
	t.Setenv("HONE_MCP_TEST_STARTS", starts)
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: []string{os.Args[0], "-test.run=^$"}, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, starts
}

func countStarts(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// countingServer writes a Python MCP server, the example's with body run
// after it is imported (body ends by calling server.main()), that adds a
// line to the file starts each time it starts (countStarts reads them)
// and has the number of this start in start; it returns the command that
// runs it, and starts.
func countingServer(t *testing.T, body string) (command []string, starts string) {
	t.Helper()
	py := envtest.Python(t, os.Getenv("CI") != "")
	dir := t.TempDir()
	example, _ := filepath.Abs("../../../pipelines/mcp-env-example")
	script, starts := filepath.Join(dir, "wrapped.py"), filepath.Join(dir, "starts")
	prelude := `import os, sys
sys.path.insert(0, sys.argv[1])
with open(sys.argv[2], "a") as f:
    f.write("start\n")
with open(sys.argv[2]) as f:
    start = len(f.readlines())
import server
`
	if err := os.WriteFile(script, []byte(prelude+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{py, script, example, starts}, starts
}

// TestServerRestarted: a server that dies mid-run (killed for memory)
// fails the episode that was using it, with an error that says so and
// quotes the server's stderr, and the next episode gets a new server.
// Before, one session served the whole run and every later episode
// failed with "connection closed".
func TestServerRestarted(t *testing.T) {
	e, starts := startServer(t, "die")
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Play(ctx, ep, calls("die", `{}`), 4)
	if err == nil || !strings.Contains(err.Error(), "server was lost") || !strings.Contains(err.Error(), "dying on purpose") {
		t.Fatalf("episode on the dying server: err %v", err)
	}
	for i := range 2 {
		ep, err = e.NewEpisode(ctx, tasks[0], 0)
		if err != nil {
			t.Fatalf("episode %d after the crash: %v", i, err)
		}
		res, err := env.Play(ctx, ep, calls("add", `{"a":2,"b":3}`), 4)
		if err != nil || res.Outcome.Reward != 1 {
			t.Fatalf("episode %d after the crash: err %v outcome %+v", i, err, res.Outcome)
		}
	}
	if n := countStarts(t, starts); n != 2 {
		t.Errorf("the server started %d times, want 2 (once, then once again after it died)", n)
	}
}

// TestRestartsBounded: a server that dies at every call is restarted
// three times in a row, then the environment gives up: each later
// episode fails at once, naming the server's stderr, rather than the run
// starting the server anew for each of thousands of episodes.
func TestRestartsBounded(t *testing.T) {
	e, starts := startServer(t, "crash")
	ctx := context.Background()
	for i := range 8 {
		ep, err := e.NewEpisode(ctx, tasks[0], 0)
		if err != nil {
			if i != 4 || !strings.Contains(err.Error(), "gave up") || !strings.Contains(err.Error(), "out of memory") {
				t.Fatalf("episode %d: %v", i, err)
			}
			break
		}
		if i == 4 {
			t.Fatal("episode 4 started: want the environment to have given up after 3 restarts")
		}
		if _, err := env.Play(ctx, ep, calls("add", `{"a":2,"b":3}`), 4); err == nil {
			t.Fatalf("episode %d succeeded on a server that crashes", i)
		}
	}
	if _, err := e.NewEpisode(ctx, tasks[0], 0); err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Errorf("after giving up: %v", err)
	}
	if n := countStarts(t, starts); n != 4 {
		t.Errorf("the server started %d times, want 4 (once and 3 restarts)", n)
	}
}

// TestOverLimitResultsDoNotGiveUp: a tool result over the SDK's 16 MiB
// limit on one message ends the session, so the next episode gets a new
// server, but the server answered: each such result fails its own
// episode only. Before, it counted as a server lost without an answer,
// and three in a row gave up on a healthy server, failing every later
// episode of the run.
func TestOverLimitResultsDoNotGiveUp(t *testing.T) {
	e, starts := startServer(t, "huge")
	ctx := context.Background()
	for i := range maxRestartsPlus2 {
		ep, err := e.NewEpisode(ctx, tasks[0], 0)
		if err != nil {
			t.Fatalf("episode %d after %d results over the limit: %v", i, i, err)
		}
		if _, err := env.Play(ctx, ep, calls("huge", `{}`), 4); err == nil || !strings.Contains(err.Error(), "16 MiB") {
			t.Fatalf("episode %d: %v; want its result over the 16 MiB limit said", i, err)
		}
	}
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatalf("episode after the results over the limit: %v", err)
	}
	if res, err := env.Play(ctx, ep, calls("add", `{"a":2,"b":3}`), 4); err != nil || res.Outcome.Reward != 1 {
		t.Fatalf("episode after the results over the limit: err %v outcome %+v", err, res.Outcome)
	}
	if n := countStarts(t, starts); n != maxRestartsPlus2+1 {
		t.Errorf("the server started %d times, want %d (once per session the limit ended)", n, maxRestartsPlus2+1)
	}
}

// maxRestartsPlus2 is past the 3 restarts in a row the environment
// allows a server lost without an answer.
const maxRestartsPlus2 = 5

// TestURLServerReconnected: a URL's server that restarted (here: its
// handler replaced, which forgets the session) fails the episode on the
// old session, and the next episode connects again.
func TestURLServerReconnected(t *testing.T) {
	var h atomic.Pointer[http.Handler]
	swap := func() {
		var hh http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
		h.Store(&hh)
	}
	swap()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	defer srv.Close()
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{URL: srv.URL, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	swap() // the server restarted: it knows the session no more
	if _, err := env.Play(ctx, ep, calls("add", `{"a":2,"b":3}`), 4); err == nil || !strings.Contains(err.Error(), "server was lost") {
		t.Fatalf("episode on the forgotten session: %v", err)
	}
	ep, err = e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := env.Play(ctx, ep, calls("add", `{"a":2,"b":3}`), 4); err != nil || res.Outcome.Reward != 1 {
		t.Fatalf("episode after reconnecting: err %v outcome %+v", err, res.Outcome)
	}
}

// TestUnreadableResultKeepsServer: a call whose result the SDK cannot
// read (content that is not a list) fails its episode, but the server,
// which still answers a ping, is not restarted under the other episodes
// using it. The server is the Python example's, with that one answer
// broken.
func TestUnreadableResultKeepsServer(t *testing.T) {
	command, starts := countingServer(t, `handle = server.handle
def bad(method, params):
    if method == "tools/call" and (params.get("arguments") or {}).get("country") == "Bad":
        return {"content": "not a list"}
    return handle(method, params)
server.handle = bad
server.main()
`)
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: command, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Play(ctx, ep, calls("capital", `{"country":"Bad"}`), 4); err == nil || strings.Contains(err.Error(), "server was lost") {
		t.Fatalf("episode with the unreadable result: %v; want it failed, the server not lost", err)
	}
	ep, err = e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := env.Play(ctx, ep, calls("capital", `{"country":"Peru"}`), 4); err != nil || !strings.Contains(res.Messages[len(res.Messages)-1].Content, "Lima") {
		t.Fatalf("next episode: %v %+v", err, res.Messages)
	}
	if n := countStarts(t, starts); n != 1 {
		t.Errorf("the server started %d times, want once", n)
	}
}

// TestRestartListsToolsAgain: a restarted server's tools are listed
// again, and the episodes on it are offered those. Before, the tools
// listed at the start were offered for the whole run: a server whose
// program changed meanwhile (here the Python example, which offers a
// third tool from its second start on) had its new tool refused as
// unknown and a removed one called in vain.
func TestRestartListsToolsAgain(t *testing.T) {
	command, starts := countingServer(t, `call = server.call_tool
if start > 1:
    server.TOOLS.append({"name": "motto", "description": "A country's motto.",
                         "inputSchema": {"type": "object", "properties": {"country": {"type": "string"}}}})
def call_tool(name, args):
    if args.get("country") == "Atlantis":
        sys.stderr.write("killed: out of memory\n")
        sys.stderr.flush()
        os._exit(9)
    if name == "motto" and start > 1:
        return "Liberte, egalite, fraternite", False
    return call(name, args)
server.call_tool = call_tool
server.main()
`)
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: command, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	names := func(tools []trajectory.Tool) string {
		var s []string
		for _, tool := range tools {
			s = append(s, tool.Name)
		}
		return strings.Join(s, ",")
	}
	if got := names(e.Tools()); got != "capital,population" {
		t.Fatalf("tools at the start: %s", got)
	}
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Play(ctx, ep, calls("capital", `{"country":"Atlantis"}`), 4); err == nil || !strings.Contains(err.Error(), "server was lost") {
		t.Fatalf("episode on the dying server: %v", err)
	}
	ep, err = e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Play(ctx, ep, calls("motto", `{"country":"France"}`), 4)
	if err != nil || names(res.Tools) != "capital,population,motto" || !strings.Contains(res.Messages[len(res.Messages)-1].Content, "Liberte") {
		t.Fatalf("episode on the restarted server: err %v, tools %s, messages %+v", err, names(res.Tools), res.Messages)
	}
	if got := names(e.Tools()); got != "capital,population,motto" {
		t.Errorf("tools after the restart: %s", got)
	}
	if n := countStarts(t, starts); n != 2 {
		t.Errorf("the server started %d times, want 2", n)
	}
}

// TestRestartWithinStartTimeout: a server started again after it was
// lost has the start timeout to answer, as at the start of the run. Here
// the second start never answers its initialize: the episode asking for
// it fails within the start timeout, saying so. Before, a restart had the
// episode's whole time (none at all with --episode-timeout 0), holding
// every other episode waiting for a server meanwhile.
func TestRestartWithinStartTimeout(t *testing.T) {
	command, _ := countingServer(t, `import time
if start > 1:
    time.sleep(1000)
call = server.call_tool
def call_tool(name, args):
    if args.get("country") == "Atlantis":
        os._exit(9)
    return call(name, args)
server.call_tool = call_tool
server.main()
`)
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: command, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetStartTimeout(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Play(ctx, ep, calls("capital", `{"country":"Atlantis"}`), 4); err == nil || !strings.Contains(err.Error(), "server was lost") {
		t.Fatalf("episode on the dying server: %v", err)
	}
	_, err = e.NewEpisode(ctx, tasks[0], 0)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "start timeout 500ms") {
		t.Fatalf("episode asking for a server that does not start: err %v (episode's context: %v)", err, ctx.Err())
	}
}

// TestDuplicateToolNamesRefused: a server that lists two tools under one
// name (the Python example with its capital tool listed again, with
// another schema) is refused, naming the tool. Before, both went to the
// model, whose calls were checked against the first's schema only and
// sent to the server by the name alone, which of the two it ran being
// the server's guess.
func TestDuplicateToolNamesRefused(t *testing.T) {
	command, _ := countingServer(t, `server.TOOLS.append({"name": "capital", "description": "The capital of a region.",
                     "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}})
server.main()
`)
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: command, Tasks: tasks})
	if err == nil {
		e.Close()
		t.Fatal("a server listing capital twice was accepted")
	}
	if !strings.Contains(err.Error(), `"capital"`) || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("%v; want the tool listed twice named", err)
	}
}
