package mcpenv_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/mcpenv"
)

// TestRestartLogsChangedTools: a restarted server that lists other tools
// than the one before (here the Python example, which drops population
// and adds motto from its second start on) is logged, naming the tools
// added and removed: the episodes after it are offered other tools, which
// changes what the run's rows mean, and that was said nowhere. A restart
// with the same tools logs the restart only.
func TestRestartLogsChangedTools(t *testing.T) {
	command, _ := countingServer(t, `if start == 2:
    server.TOOLS[1:] = [{"name": "motto", "description": "A country's motto.",
                         "inputSchema": {"type": "object", "properties": {"country": {"type": "string"}}}}]
call = server.call_tool
def call_tool(name, args):
    if args.get("country") == "Atlantis":
        os._exit(9)
    return call(name, args)
server.call_tool = call_tool
server.main()
`)
	var log bytes.Buffer
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: command, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	e.SetLog(slog.New(slog.NewTextHandler(&log, nil)))
	defer e.Close()
	ctx := context.Background()
	crash := func() {
		t.Helper()
		ep, err := e.NewEpisode(ctx, tasks[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Play(ctx, ep, calls("capital", `{"country":"Atlantis"}`), 4); err == nil {
			t.Fatal("the episode calling Atlantis succeeded")
		}
	}
	crash()
	ep, err := e.NewEpisode(ctx, tasks[0], 0) // the second start
	if err != nil {
		t.Fatal(err)
	}
	ep.Close()
	if !strings.Contains(log.String(), "other tools") || !strings.Contains(log.String(), "added=[motto]") || !strings.Contains(log.String(), "removed=[population]") {
		t.Fatalf("log after a restart with other tools:\n%s", log.String())
	}
	log.Reset()
	crash()
	ep, err = e.NewEpisode(ctx, tasks[0], 0) // the third, as the first
	if err != nil {
		t.Fatal(err)
	}
	ep.Close()
	if !strings.Contains(log.String(), "added=[population]") || !strings.Contains(log.String(), "removed=[motto]") {
		t.Fatalf("log after the restart back to the first tools:\n%s", log.String())
	}
}
