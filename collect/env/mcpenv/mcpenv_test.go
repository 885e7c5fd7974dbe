package mcpenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

type addIn struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

// testServer is a small MCP server: add, and fail (always a tool error).
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "add two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "always fails"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("this tool always fails")
	})
	return s
}

// TestMain doubles as the stdio MCP server when the tests start
// themselves as one.
func TestMain(m *testing.M) {
	if f := os.Getenv("HONE_MCP_TEST_STARTS"); f != "" {
		// The restart tests count the server's starts, a line each.
		out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(out, os.Getpid())
			out.Close()
		}
	}
	if os.Getenv("HONE_MCP_TEST_SERVER") == "crash" {
		// A server that dies at its first tool call.
		s := mcp.NewServer(&mcp.Implementation{Name: "crash", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "add two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crash: out of memory")
			os.Exit(3)
			return nil, nil, nil
		})
		s.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	if os.Getenv("HONE_MCP_TEST_SERVER") == "die" {
		// The test server plus a tool that makes it die, as a server
		// killed for memory would mid-run.
		s := testServer()
		mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "exit"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "dying on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
		s.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	if os.Getenv("HONE_MCP_TEST_SERVER") == "huge" {
		// The test server plus a tool whose result is over the SDK's
		// limit on one message: the server stays healthy.
		s := testServer()
		mcp.AddTool(s, &mcp.Tool{Name: "huge", Description: "a 17 MiB result"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 17<<20)}}}, nil, nil
		})
		s.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	if os.Getenv("HONE_MCP_TEST_SERVER") == "1" {
		if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var tasks = []env.Scenario{
	{ID: "t1", Payload: json.RawMessage(`{"task":"What is 2+3?","answer":"5","solution":{"calls":[{"name":"add","arguments":{"a":2,"b":3}}],"answer":"It is 5."}}`)},
	{ID: "t2", Payload: json.RawMessage(`{"task":"What is 10+32?","answer":"42","solution":{"calls":[{"name":"fail"},{"name":"add","arguments":{"a":10,"b":30}},{"name":"add","arguments":{"a":40,"b":2}}]}}`)},
}

func connect(t *testing.T, transport string) *mcpenv.Env {
	t.Helper()
	o := mcpenv.Options{Tasks: tasks}
	switch transport {
	case "stdio":
		t.Setenv("HONE_MCP_TEST_SERVER", "1")
		o.Command = []string{os.Args[0], "-test.run=^$"}
	case "http":
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		o.URL = srv.URL
	}
	e, err := mcpenv.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// adder reads the two numbers of the task, calls add, then answers.
func adder(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		return env.Assistant("The answer is " + last.Content), nil
	}
	var a, b int
	fmt.Sscanf(strings.TrimPrefix(last.Content, "What is "), "%d+%d", &a, &b)
	return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{
		{ID: "c1", Type: "function", Name: "fail", Arguments: `{}`},
		{ID: "c2", Type: "function", Name: "add", Arguments: fmt.Sprintf(`{"a":%d,"b":%d}`, a, b)},
	}}, nil
}

func TestMCP(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			e := connect(t, transport)
			names := []string{}
			for _, tool := range e.Tools() {
				names = append(names, tool.Name)
			}
			if strings.Join(names, ",") != "add,fail" || !strings.Contains(e.Tools()[0].Parameters, `"a"`) {
				t.Fatalf("tools %+v", e.Tools())
			}
			envtest.Suite(t, e, envtest.SuiteOptions{Scenarios: 2, MaxTurns: 4})
			ctx := context.Background()
			for _, sc := range tasks {
				ep, err := e.NewEpisode(ctx, sc, 0)
				if err != nil {
					t.Fatal(err)
				}
				res, err := env.Play(ctx, ep, env.PolicyFunc(adder), 4)
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome.Reward != 1 || res.Outcome.Metrics["tool_errors"] != 1 || !res.Done {
					t.Errorf("%s: %+v", sc.ID, res.Outcome)
				}
				if m := res.Messages[3]; m.ToolCallID != "c1" || !strings.Contains(m.Content, "always fails") {
					t.Errorf("%s: failing tool result %+v", sc.ID, m)
				}
			}
		})
	}
}

// Generating scenarios without tasks (--env mcp with neither --scenarios
// nor --env-opt tasks=FILE) is bad usage, exit 2 as README's exit codes
// say, not a failure (exit 1).
func TestScenariosWithoutTasksIsUsage(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	_, err = e.Scenarios(context.Background(), 1, 2)
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "tasks=FILE") {
		t.Fatalf("Scenarios without tasks: %v; want a usage error naming --env-opt tasks=FILE", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := mcpenv.Open(ctx, mcpenv.Options{}); err == nil {
		t.Error("no server accepted")
	}
	if _, err := mcpenv.Open(ctx, mcpenv.Options{Command: []string{"/nonexistent/server"}}); err == nil {
		t.Error("missing command accepted")
	}
}

// TestReplay plays each task's solution through the real server and checks
// the calls, the server's answers and that the reward is the one the
// adder policy earns by answering correctly.
func TestReplay(t *testing.T) {
	e := connect(t, "stdio")
	ctx := context.Background()
	// t2's solution has no answer of its own: the payload's is used.
	finalAnswer := map[string]string{"t1": "It is 5.", "t2": "42"}
	wantCalls := map[string][]string{"t1": {"add 5"}, "t2": {"fail this tool always fails", "add 40", "add 42"}}
	play := func(sc env.Scenario, p env.Policy) env.PlayResult {
		t.Helper()
		ep, err := e.NewEpisode(ctx, sc, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := env.Play(ctx, ep, p, 8)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, sc := range tasks {
		want := play(sc, env.PolicyFunc(adder)).Outcome.Reward
		p, err := e.Policy("replay", 1)
		if err != nil {
			t.Fatal(err)
		}
		res := play(sc, p)
		if res.Outcome.Reward != want || want != 1 || !res.Done || res.Outcome.Metrics["correct"] != 1 {
			t.Errorf("%s: replay outcome %+v, adder's reward %v", sc.ID, res.Outcome, want)
		}
		var got []string
		for i, m := range res.Messages {
			if m.Role == "tool" {
				call := res.Messages[i-1].ToolCalls[0]
				if call.ID != m.ToolCallID {
					t.Errorf("%s: result %+v answers another call than %+v", sc.ID, m, call)
				}
				got = append(got, call.Name+" "+strings.TrimPrefix(m.Content, "error: "))
			}
		}
		if strings.Join(got, "|") != strings.Join(wantCalls[sc.ID], "|") {
			t.Errorf("%s: calls and results %q, want %q", sc.ID, got, wantCalls[sc.ID])
		}
		if last := res.Messages[len(res.Messages)-1]; last.Role != "assistant" || len(last.ToolCalls) != 0 || last.Content != finalAnswer[sc.ID] {
			t.Errorf("%s: final message %+v", sc.ID, last)
		}
	}

	bare := env.Scenario{ID: "nosol", Payload: json.RawMessage(`{"task":"What is 1+1?","answer":"2"}`)}
	ep, err := e.NewEpisode(ctx, bare, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := e.Policy("replay", 1)
	if _, err := env.Play(ctx, ep, p, 4); err == nil || !strings.Contains(err.Error(), "scenario nosol has no \"solution\"") {
		t.Errorf("no solution: err %v", err)
	}
	if _, err := e.Policy("nope", 1); !errors.Is(err, env.ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
}

// Resources lists a server's resources across pages (two per page here),
// and none for a server without the resources capability.
func TestResources(t *testing.T) {
	if rs, err := connect(t, "http").Resources(context.Background()); err != nil || rs != nil {
		t.Errorf("a server without resources: %v, %+v", err, rs)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "add two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	read := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	want := []mcpenv.Resource{
		{URI: "file:///a.csv", Name: "a", Description: "table a", MIMEType: "text/csv"},
		{URI: "file:///b.txt", Name: "b"},
		{URI: "file:///c.md", Name: "c", Description: "notes"},
	}
	for _, r := range want {
		s.AddResource(&mcp.Resource{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType}, read)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rs, err := e.Resources(context.Background())
	if err != nil || fmt.Sprint(rs) != fmt.Sprint(want) {
		t.Errorf("resources %+v (%v), want %+v", rs, err, want)
	}
}

// A server that dies mid-episode loses the session: the episode fails
// (docs/mcp-env.md: "the session lost" is a row with its error), rather
// than going on with every later call answered "error: connection closed"
// and a reward, as would every later episode of the run.
func TestSessionLost(t *testing.T) {
	t.Setenv("HONE_MCP_TEST_SERVER", "crash")
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: []string{os.Args[0], "-test.run=^$"}, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, sc := range tasks {
		ep, err := e.NewEpisode(ctx, sc, 0)
		if err != nil {
			t.Fatal(err)
		}
		add := func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
			if msgs[len(msgs)-1].Role == "tool" {
				return env.Assistant("The answer is " + msgs[len(msgs)-1].Content), nil
			}
			return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: "add", Arguments: `{"a":1,"b":2}`}}}, nil
		}
		res, err := env.Play(ctx, ep, env.PolicyFunc(add), 4)
		if err == nil {
			t.Errorf("%s: the episode succeeded without its server: %+v", sc.ID, res.Messages)
		}
	}
}

// A call the server rejects (here a tool it does not have) stays the
// model's feedback.
func TestRejectedCallIsFeedback(t *testing.T) {
	e := connect(t, "stdio")
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	c := trajectory.ToolCall{ID: "c1", Type: "function", Name: "nosuch", Arguments: `{}`}
	fb, err := ep.Step(ctx, env.Turn{Message: trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{c}}, Calls: []trajectory.ToolCall{c}})
	if err != nil || len(fb.Messages) != 1 || !strings.HasPrefix(fb.Messages[0].Content, "error: ") || ep.Outcome().Metrics["tool_errors"] != 1 {
		t.Fatalf("rejected call: %+v, %v", fb, err)
	}
	t.Log(fb.Messages[0].Content)
}

// wireServer is testServer over HTTP, recording the raw arguments of each
// tools/call request as the server received them.
func wireServer(t *testing.T) (*mcpenv.Env, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var sent []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Method string `json:"method"`
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &req) == nil && req.Method == "tools/call" {
			mu.Lock()
			sent = append(sent, string(req.Params.Arguments))
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{URL: srv.URL, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(sent)
	}
}

// callOnce plays an episode of tasks[0] whose policy makes one call of
// tool with args, then answers.
func callOnce(t *testing.T, e *mcpenv.Env, tool, args string) {
	t.Helper()
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	p := env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
		if msgs[len(msgs)-1].Role == "tool" {
			return env.Assistant("done"), nil
		}
		return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: tool, Arguments: args}}}, nil
	})
	if _, err := env.Play(ctx, ep, p, 4); err != nil {
		t.Fatalf("arguments %q: %v", args, err)
	}
}

// A call whose arguments are empty or null (as models give a tool without
// parameters), which CheckCall reads as {}, reaches the server with
// "arguments": {} (was null): the protocol's arguments are an object, and
// a server that checks its params against the schema rejects null.
func TestEmptyArgumentsSentAsObject(t *testing.T) {
	e, sent := wireServer(t)
	for _, args := range []string{"", "null", " ", "{}"} {
		callOnce(t, e, "fail", args)
	}
	got := sent()
	if len(got) != 4 {
		t.Fatalf("%d tools/call requests, want 4: %q", len(got), got)
	}
	for i, s := range got {
		if s != "{}" {
			t.Errorf("call %d: arguments sent as %s, want {}", i, s)
		}
	}
}

// The numbers of a call reach the server as the model wrote them (was:
// read into float64 and written again, so an integer id past 2^53 lost its
// last digits, 9007199254740993 arriving as 9007199254740992, and a large
// one became 1e+21).
func TestArgumentNumbersKept(t *testing.T) {
	e, sent := wireServer(t)
	args := `{"a":9007199254740993,"b":1000000000000000000000}`
	callOnce(t, e, "add", args)
	got := sent()
	if len(got) != 1 {
		t.Fatalf("%d tools/call requests, want 1: %q", len(got), got)
	}
	var want, have any
	dw, dh := json.NewDecoder(strings.NewReader(args)), json.NewDecoder(strings.NewReader(got[0]))
	dw.UseNumber()
	dh.UseNumber()
	if dw.Decode(&want) != nil || dh.Decode(&have) != nil || !reflect.DeepEqual(want, have) {
		t.Errorf("arguments sent as %s, want %s", got[0], args)
	}
}

// A result with structured content and no content blocks reaches the
// model as the structured content's JSON (it was an empty tool message).
func TestStructuredContentOnly(t *testing.T) {
	ctx := context.Background()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := testServer()
		// Structured content alone: no text block, which the protocol asks
		// for "for backwards compatibility" but a server may leave out.
		s.AddTool(&mcp.Tool{Name: "sum", Description: "add two numbers, as JSON", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 5}}, nil
			})
		return s
	}, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e, err := mcpenv.Open(ctx, mcpenv.Options{URL: srv.URL, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	p := env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
		if m := msgs[len(msgs)-1]; m.Role == "tool" {
			got = m.Content
			return env.Assistant("done"), nil
		}
		return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: "sum", Arguments: "{}"}}}, nil
	})
	if _, err := env.Play(ctx, ep, p, 4); err != nil {
		t.Fatal(err)
	}
	if got != `{"sum":5}` {
		t.Errorf("tool message %q, want the structured content {\"sum\":5}", got)
	}
}

// Repeated tasks get ids of their own, also where a task is named as a
// repeat would be ("t1-1"): two scenarios shared that id, so their groups
// could not be told apart.
func TestRepeatIDsUnique(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil))
	t.Cleanup(srv.Close)
	named := []env.Scenario{tasks[0], {ID: "t1-1", Payload: tasks[1].Payload}}
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{URL: srv.URL, Tasks: named})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	scs, err := e.Scenarios(context.Background(), 1, 6)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sc := range scs {
		if seen[sc.ID] {
			t.Errorf("scenario id %q twice in %v", sc.ID, scs)
		}
		seen[sc.ID] = true
	}
	if scs[2].ID != "t1-1-1" || scs[4].ID != "t1-2" {
		t.Errorf("ids %q, %q; want t1-1-1 (t1-1 is a task) and t1-2", scs[2].ID, scs[4].ID)
	}
}

// A stdio server that fails before it answers (a traceback, a missing
// setting) is quoted in the error with what it wrote on stderr, as a stdio
// environment is: the error said only "calling "initialize": EOF", the
// server's stderr being discarded.
func TestOpenQuotesServerStderr(t *testing.T) {
	_, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: []string{"sh", "-c", "echo 'config.yaml: no such file' >&2; exit 1"}})
	if err == nil || !strings.Contains(err.Error(), "; stderr: config.yaml: no such file") {
		t.Fatalf("got %v, want the server's stderr quoted", err)
	}
}
