package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
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

// genReply is a scripted task writer's reply.
func genReply(tasks ...string) openaitest.Reply {
	return openaitest.Reply{Content: `{"tasks":[` + strings.Join(tasks, ",") + `]}`}
}

// GenerateTasks asks again for the tasks still missing until it holds
// exactly N valid ones; the calls it makes are checked one by one: the
// tools and resources in the prompt, the schema fixing the count, the
// difficulty and summary requirements, the kept tasks shown on a retry.
func TestGenerateTasks(t *testing.T) {
	replies := []openaitest.Reply{
		genReply(`{"task":"Multiply 4 by 9, then summarize what you did.","difficulty":2,"answer":"36"}`,
			`{"task":"multiply 4 by  9, then SUMMARIZE what you did.","difficulty":2,"answer":"36"}`, // a repeat
			`{"task":"Square 12 and summarize.","difficulty":7,"answer":"144"}`,                      // difficulty out of range
			`{"task":"Multiply 3 by 3.","difficulty":1,"answer":"9"}`),                               // no summary
		{Content: "Here are three more tasks!"},
		genReply(`{"task":"Compute 2 times 8 and give a summary.","difficulty":1,"answer":"16"}`,
			`{"task":"Price 7 items at 3.5 each using the rate sheet; summarize the totals.","difficulty":5,"answer":"24.5"}`,
			`{"task":"Multiply 6 by 7 and summarise your steps.","difficulty":3.0,"answer":""}`,
			`{"task":"One too many, with a summary.","difficulty":2,"answer":""}`),
	}
	srv := openaitest.New(nil)
	defer srv.Close()
	srv.Reply = func(openaitest.Request) openaitest.Reply { return replies[srv.Count()-1] }
	tools := []trajectory.Tool{{Type: "function", Name: "multiply", Description: "multiply two numbers", Parameters: `{"type":"object","properties":{"a":{"type":"number"}}}`}}
	res := []mcpenv.Resource{{URI: "file:///rates.csv", Name: "rate sheet", Description: "prices per item", MIMEType: "text/csv"}}
	scs, st, err := collect.GenerateTasks(context.Background(), collect.TaskGenOptions{Tools: tools, Resources: res, N: 4, Seed: 2, ValFraction: 0.25,
		Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"task":"Multiply 4 by 9, then summarize what you did.","answer":"36","difficulty":2}`,
		`{"task":"Compute 2 times 8 and give a summary.","answer":"16","difficulty":1}`,
		`{"task":"Price 7 items at 3.5 each using the rate sheet; summarize the totals.","answer":"24.5","difficulty":5}`,
		`{"task":"Multiply 6 by 7 and summarise your steps.","difficulty":3}`,
	}
	if len(scs) != len(want) {
		t.Fatalf("%d tasks, want %d: %+v", len(scs), len(want), scs)
	}
	for i, sc := range scs {
		split := "train"
		if i == 3 {
			split = "val"
		}
		if string(sc.Payload) != want[i] || sc.ID != fmt.Sprintf("mcp-2-%03d", i) || sc.Env != "mcp" || sc.Split != split {
			t.Errorf("task %d: %+v %s, want %s in %s", i, sc, sc.Payload, want[i], split)
		}
	}
	wantDropped := map[string]int{"repeated": 1, "without a difficulty from 1 to 5": 1, "not asking for a summary": 1,
		"replies that are not the JSON asked for": 1, "beyond the number asked for": 1}
	if st.Calls != 3 || st.Difficulty != [6]int{0, 1, 1, 1, 0, 1} || fmt.Sprint(st.Dropped) != fmt.Sprint(wantDropped) {
		t.Errorf("stats %+v", st)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d calls, want 3", len(reqs))
	}
	for i, r := range reqs {
		n := []int{4, 3, 3}[i]
		raw, prompt := string(r.Raw), r.LastContent()
		var body struct {
			ResponseFormat struct {
				JSONSchema struct {
					Schema struct {
						Properties struct {
							Tasks struct {
								MinItems, MaxItems int
								Items              struct {
									Required   []string
									Properties struct {
										Difficulty struct{ Minimum, Maximum int }
									}
								}
							}
						}
					}
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			t.Fatal(err)
		}
		tasks := body.ResponseFormat.JSONSchema.Schema.Properties.Tasks
		if tasks.MinItems != n || tasks.MaxItems != n || fmt.Sprint(tasks.Items.Required) != "[task answer difficulty]" ||
			tasks.Items.Properties.Difficulty.Minimum != 1 || tasks.Items.Properties.Difficulty.Maximum != 5 {
			t.Errorf("call %d: schema %+v, want exactly %d tasks with a difficulty 1-5", i+1, tasks, n)
		}
		if r.Model != "gen" || r.Seed == nil || *r.Seed != int64(2+i) || r.MaxTokens == nil || *r.MaxTokens != 8000 || len(r.Messages) != 1 {
			t.Errorf("call %d: %s", i+1, raw)
		}
		for _, s := range []string{
			fmt.Sprintf("Write %d different tasks", n),
			`"name": "multiply"`, `"description": "multiply two numbers"`, `"properties": {`,
			`"uri": "file:///rates.csv"`, `"mimeType": "text/csv"`, `"description": "prices per item"`,
			"difficulty, an integer from 1", "a summary of the work it did",
		} {
			if !strings.Contains(prompt, s) {
				t.Errorf("call %d: the prompt lacks %q:\n%s", i+1, s, prompt)
			}
		}
		if strings.Contains(prompt, "already written") != (i > 0) || i > 0 && !strings.Contains(prompt, "\n- Multiply 4 by 9, then summarize what you did.\n") {
			t.Errorf("call %d: the kept tasks are (not) shown:\n%s", i+1, prompt)
		}
	}

	// Short of N after the last call: an error that says why.
	srv.Reply = func(openaitest.Request) openaitest.Reply {
		return genReply(`{"task":"Multiply 4 by 9.","difficulty":1,"answer":"36"}`)
	}
	_, st, err = collect.GenerateTasks(context.Background(), collect.TaskGenOptions{Tools: tools, N: 3, Calls: 2, Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}})
	if err == nil || !strings.Contains(err.Error(), "0 valid tasks of 3 after 2 model calls (dropped 2 not asking for a summary)") || st.Calls != 2 {
		t.Errorf("short: %v, %+v", err, st)
	}
	// Without the summary requirement the same task passes, once.
	before := srv.Count()
	scs, st, err = collect.GenerateTasks(context.Background(), collect.TaskGenOptions{Tools: tools, N: 2, Calls: 2, NoSummary: true, Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}})
	if err == nil || !strings.Contains(err.Error(), "1 valid tasks of 2 after 2 model calls (dropped 1 repeated)") {
		t.Errorf("no summary: %v %+v", err, scs)
	}
	if p := srv.Requests()[before].LastContent(); strings.Contains(p, "summary") || !strings.Contains(p, "Resources:\nnone\n") {
		t.Errorf("prompt without the summary requirement or resources:\n%s", p)
	}
	if _, _, err := collect.GenerateTasks(context.Background(), collect.TaskGenOptions{N: 2, Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}}); err == nil {
		t.Error("no tools: no error")
	}
}

// A --val-fraction outside [0, 1] (say 10, meant as 10%) is refused as bad
// usage before any model call, rather than panicking once the tasks were
// paid for.
func TestGenerateTasksValFraction(t *testing.T) {
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return genReply(`{"task":"Multiply 4 by 9, then summarize.","difficulty":2,"answer":"36"}`, `{"task":"Multiply 3 by 9, then summarize.","difficulty":2,"answer":"27"}`)
	})
	defer srv.Close()
	tools := []trajectory.Tool{{Type: "function", Name: "multiply", Parameters: `{"type":"object"}`}}
	for _, f := range []float64{10, -0.5, math.NaN()} {
		_, _, err := collect.GenerateTasks(context.Background(), collect.TaskGenOptions{Tools: tools, N: 2, ValFraction: f, Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}})
		if !errors.Is(err, stageerr.ErrUsage) {
			t.Errorf("val fraction %v: %v, want a usage error", f, err)
		}
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
}

// --val-fraction is a share of the tasks as the decimal written: 0.29 of
// 100 tasks is 29 in split val, where the float product 28.999… was cut
// to 28 (as --max-failures' fraction is read).
func TestGenerateTasksValFractionExact(t *testing.T) {
	var tasks []string
	for i := range 100 {
		tasks = append(tasks, fmt.Sprintf(`{"task":"Multiply %d by 9, then summarize.","difficulty":2,"answer":"%d"}`, i, 9*i))
	}
	srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return genReply(tasks...) })
	defer srv.Close()
	tools := []trajectory.Tool{{Type: "function", Name: "multiply", Parameters: `{"type":"object"}`}}
	for _, c := range []struct {
		f    float64
		want int
	}{{0.29, 29}, {0.57, 57}, {0.1, 10}, {1, 100}, {0, 0}} {
		scs, _, err := collect.GenerateTasks(context.Background(), collect.TaskGenOptions{Tools: tools, N: 100, ValFraction: c.f, Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "gen"}})
		if err != nil {
			t.Fatal(err)
		}
		val := 0
		for i, sc := range scs {
			if sc.Split == trajectory.SplitVal {
				val++
				if i < len(scs)-c.want {
					t.Errorf("val fraction %v: task %d of %d is val, want the last %d only", c.f, i, len(scs), c.want)
				}
			}
		}
		if val != c.want {
			t.Errorf("val fraction %v of 100 tasks: %d in split val, want %d", c.f, val, c.want)
		}
	}
}

// A run whose MCP server is lost and restarted with other tools (here the
// Python example, which offers motto instead of population from its
// second start on) says so in the run's log, naming them: the later
// episodes were offered other tools.
func TestMCPRestartWithOtherToolsLogged(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	dir := t.TempDir()
	example, _ := filepath.Abs("../pipelines/mcp-env-example")
	script, starts, tasks := filepath.Join(dir, "changing.py"), filepath.Join(dir, "starts"), filepath.Join(dir, "tasks.jsonl")
	os.WriteFile(script, []byte(`import os, sys
sys.path.insert(0, sys.argv[1])
with open(sys.argv[2], "a") as f:
    f.write("start\n")
with open(sys.argv[2]) as f:
    start = len(f.readlines())
import server
if start > 1:
    server.TOOLS[1:] = [{"name": "motto", "description": "A country's motto.",
                         "inputSchema": {"type": "object", "properties": {"country": {"type": "string"}}}}]
call = server.call_tool
def call_tool(name, args):
    if args.get("country") == "Atlantis":
        os._exit(9)
    return call(name, args)
server.call_tool = call_tool
server.main()
`), 0o644)
	os.WriteFile(tasks, []byte(`{"id":"sunk","environment":"mcp","payload":{"task":"Capital of Atlantis?","solution":{"calls":[{"name":"capital","arguments":{"country":"Atlantis"}}]}}}
{"id":"peru","environment":"mcp","payload":{"task":"Capital of Peru?","answer":"Lima","solution":{"calls":[{"name":"capital","arguments":{"country":"Peru"}}],"answer":"Lima"}}}
`), 0o644)
	var out, log bytes.Buffer
	o := collect.Options{Env: "mcp", EnvOpts: map[string]string{"cmd": py + " " + script + " " + example + " " + starts}, Scenarios: tasks,
		GroupSize: 1, Concurrency: 1, Run: "r", Policy: "scripted:replay", Out: &out, Log: slog.New(slog.NewTextHandler(&log, nil))}
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "other tools") || !strings.Contains(log.String(), "added=[motto]") || !strings.Contains(log.String(), "removed=[population]") {
		t.Errorf("log of a run whose server came back with other tools:\n%s", log.String())
	}
}
