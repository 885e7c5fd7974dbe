package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/trajectory"
)

type mulIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func mcpServer(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "multiply", Description: "multiply two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in mulIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A * in.B)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A model-driven run over a real MCP server (streamable HTTP): the tools
// are listed for the model, its calls run on the server, the answer is
// checked against the task file's answer.
func TestRunMCP(t *testing.T) {
	url := mcpServer(t)
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	os.WriteFile(tasks, []byte(`{"id":"m1","environment":"mcp","payload":{"task":"What is 6 times 7?","answer":"42"}}
{"id":"m2","environment":"mcp","payload":{"task":"What is 3 times 5?","answer":"15"}}
`), 0o644)
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		var last struct{ Role, Content string }
		json.Unmarshal(r.Messages[len(r.Messages)-1], &last)
		if last.Role == "tool" {
			return openaitest.Reply{Content: "The answer is " + last.Content}
		}
		var a, b int
		fmt.Sscanf(last.Content, "What is %d times %d?", &a, &b)
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "multiply", Arguments: fmt.Sprintf(`{"a":%d,"b":%d}`, a, b)}}}
	})
	defer srv.Close()
	var out bytes.Buffer
	o := collect.Options{Scenarios: tasks, EnvOpts: map[string]string{"url": url}, GroupSize: 2, Concurrency: 4, MaxTurns: 4, Run: "m", Out: &out,
		Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "x", Backoff: time.Millisecond}}
	st, err := runStats(context.Background(), o)
	if err != nil || st.MeanReward() != 1 {
		t.Fatalf("err %v stats %+v", err, st)
	}
	gs := readGroups(t, out.Bytes())
	tr := gs[0].Trajectories[0]
	checkTurns(t, tr)
	if tr.Env != "mcp" || len(tr.Tools) != 1 || tr.Tools[0].Name != "multiply" || tr.Messages[3].Content != "42" {
		t.Errorf("trajectory %+v", tr)
	}
	if !strings.Contains(string(srv.Requests()[0].Raw), `"multiply"`) {
		t.Errorf("the model was not offered the tool: %s", srv.Requests()[0].Raw)
	}
}

func TestGenerateTasks(t *testing.T) {
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Content: `{"tasks":[{"task":"Multiply 4 by 9.","answer":"36"},{"task":"Multiply 4 by 9.","answer":"36"},{"task":"What is 12 times 12?","answer":"144"},{"task":"Area of a 3 by 8 rectangle?","answer":""}]}`}
	})
	defer srv.Close()
	tools := []trajectory.Tool{{Type: "function", Name: "multiply", Description: "multiply two numbers", Parameters: `{"type":"object"}`}}
	scs, err := collect.GenerateTasks(context.Background(), collect.TaskGenOptions{Tools: tools, N: 3, Seed: 2, ValFraction: 0.34,
		Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 3 || scs[0].Env != "mcp" || scs[2].Split != "val" || scs[1].Split != "train" || string(scs[1].Payload) != `{"answer":"144","task":"What is 12 times 12?"}` {
		t.Fatalf("%+v", scs)
	}
	raw := string(srv.Requests()[0].Raw)
	if !strings.Contains(raw, `"json_schema"`) || !strings.Contains(raw, "multiply two numbers") || !strings.Contains(raw, "Write 3 varied") {
		t.Errorf("request %s", raw)
	}
	srv.Reply = func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "sure, here are tasks"} }
	if _, err := collect.GenerateTasks(context.Background(), collect.TaskGenOptions{Tools: tools, N: 3, Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}}); err == nil || !strings.Contains(err.Error(), "not the JSON") {
		t.Errorf("bad reply: %v", err)
	}
}
