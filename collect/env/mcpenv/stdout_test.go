package mcpenv_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/mcpenv"
)

// printingServer writes a Python MCP server, the example's with pre
// Python run first and call_tool printing to stdout when loud, and
// returns its command.
func printingServer(t *testing.T, pre string, loud bool) []string {
	t.Helper()
	py := envtest.Python(t, os.Getenv("CI") != "")
	example, _ := filepath.Abs("../../../pipelines/mcp-env-example")
	script := filepath.Join(t.TempDir(), "loud.py")
	body := "import sys\nsys.path.insert(0, sys.argv[1])\n" + pre + "\nimport server\n"
	if loud {
		body += `call = server.call_tool
def call_tool(name, args):
    sys.stdout.write("calling %s with %s\n" % (name, args))
    sys.stdout.flush()
    return call(name, args)
server.call_tool = call_tool
`
	}
	if err := os.WriteFile(script, []byte(body+"server.main()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{py, script, example}
}

// playPeru opens the server that command starts and plays the first task
// on it with a policy that calls capital for Peru, returning the play's
// error; an error opening the server or its episode fails the test.
func playPeru(t *testing.T, command []string) error {
	t.Helper()
	ctx := context.Background()
	e, err := mcpenv.Open(ctx, mcpenv.Options{Command: command, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Play(ctx, ep, calls("capital", `{"country":"Peru"}`), 4)
	return err
}

// A stdio server that prints to stdout, where only its protocol messages
// go, fails with the line it printed and where logs belong. Before, the
// error was encoding/json's alone ("invalid character 'c' looking for
// beginning of value"), naming neither the line nor the cause, whether
// the print came at start-up (a banner) or in a tool call.
func TestServerPrintToStdoutQuoted(t *testing.T) {
	ctx := context.Background()
	_, err := mcpenv.Open(ctx, mcpenv.Options{Command: printingServer(t, `print("Countries server ready", flush=True)`, false), Tasks: tasks})
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), `"Countries server ready"`) || !strings.Contains(err.Error(), "write logs to stderr") {
		t.Errorf("server with a banner on stdout: %v; want the banner quoted and where logs go", err)
	}

	// JSON, but no JSON-RPC message: the SDK's error spoke of a
	// "version tag".
	_, err = mcpenv.Open(ctx, mcpenv.Options{Command: printingServer(t, `print('{"status": "ready"}', flush=True)`, false), Tasks: tasks})
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), `"{\"status\": \"ready\"}"`) || !strings.Contains(err.Error(), "write logs to stderr") {
		t.Errorf("server with a JSON banner on stdout: %v; want the banner quoted and where logs go", err)
	}

	err = playPeru(t, printingServer(t, "", true))
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), `"calling capital with {'country': 'Peru'}"`) || !strings.Contains(err.Error(), "write logs to stderr") {
		t.Errorf("server printing in a tool call: %v; want the line quoted and where logs go", err)
	}
}

// A tool result over the SDK's limit on one message (16 MiB) ends the
// session: the error says which limit and how large, which the SDK's
// "exceeded the configured maximum line length" did not.
func TestServerResultOverLimitSaid(t *testing.T) {
	err := playPeru(t, printingServer(t, `import server
server.call_tool = lambda name, args: ("x" * (17 << 20), False)`, false))
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "16 MiB") || !strings.Contains(err.Error(), "capital") {
		t.Errorf("a tool result of 17 MiB: %v; want the 16 MiB limit named", err)
	}
}
