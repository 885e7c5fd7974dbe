package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hone-rl/hone/cmd/internal/testbin"
	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/waitfor"
)

var binDir string

// TestMain builds hone-collect and hone-serve once: the end-to-end tests
// run both as processes.
func TestMain(m *testing.M) {
	testbin.Main(m, func(dir string) { binDir = dir }, ".", "../hone-serve")
}

type result struct {
	code           int
	stdout, stderr string
}

func collectBin(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "hone-collect"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// startServe runs the real hone-serve on the tiny test model and returns
// its base URL.
func startServe(t *testing.T) string {
	t.Helper()
	addr := openaitest.StartProcess(t, filepath.Join(binDir, "hone-serve"), "--model", "../../serve/testdata/tiny", "--port", "0", "--threads", "1")
	return "http://" + addr + "/v1"
}

func read(t *testing.T, path string) []trajectory.Group {
	t.Helper()
	gs, err := trajectory.ReadFile(context.Background(), path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return gs
}

// Every environment against the real hone-serve: whole groups, token ids
// and logprobs on every assistant turn, rewards in the environment's range.
func TestEndToEndServe(t *testing.T) {
	base := startServe(t)
	dir := t.TempDir()
	py, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	havePy := err == nil
	if !havePy && os.Getenv("CI") != "" {
		t.Fatalf("python3 not on PATH: %v", err)
	}
	script, _ := filepath.Abs("../../pipelines/stdio-env-example/env.py")
	cases := []struct {
		env    string
		opts   []string
		lo, hi float64
	}{
		{"guess", nil, -1, 1.2},
		{"tictactoe", []string{"--env-opt", "opponent=minimax"}, -1, 1},
		{"2048", []string{"--env-opt", "max-moves=3"}, -1, 1},
		{"inbox", nil, 0, 1},
	}
	if havePy {
		cases = append(cases, struct {
			env    string
			opts   []string
			lo, hi float64
		}{"stdio", []string{"--env-opt", "cmd=" + strings.TrimSpace(string(py)) + " -S " + script}, 0, 1})
	}
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			out := filepath.Join(dir, tc.env+".parquet")
			args := append([]string{"--env", tc.env, "--groups", "2", "-G", "3", "--concurrency", "4", "--max-turns", "3",
				"--model", "tiny", "--base-url", base, "--max-tokens", "4", "--temperature", "1", "--seed", "5", "-o", out}, tc.opts...)
			r := collectBin(t, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "2/2 groups, 6 episodes (0 failed)") {
				t.Errorf("summary line: %s", r.stderr)
			}
			gs := read(t, out)
			if len(gs) != 2 {
				t.Fatalf("%d groups", len(gs))
			}
			for _, g := range gs {
				if len(g.Trajectories) != 3 {
					t.Fatalf("group %s: %d trajectories", g.ID, len(g.Trajectories))
				}
				for _, tr := range g.Trajectories {
					if tr.Error != "" || tr.Reward == nil || *tr.Reward < tc.lo || *tr.Reward > tc.hi {
						t.Errorf("%s: error %q reward %v", tr.ID, tr.Error, tr.Reward)
					}
					turns := 0
					for i, m := range tr.Messages {
						if m.Role != "assistant" {
							continue
						}
						turns++
						if !m.Trainable || len(m.TokenIDs) == 0 || len(m.TokenIDs) > 4 || len(m.Logprobs) != len(m.TokenIDs) || m.AnswerModel != "tiny" || m.FinishReason == "" {
							t.Errorf("%s message %d: trainable %v, %d ids, %d logprobs, model %q, finish %q", tr.ID, i, m.Trainable, len(m.TokenIDs), len(m.Logprobs), m.AnswerModel, m.FinishReason)
						}
						for _, lp := range m.Logprobs {
							if !(lp <= 0) {
								t.Errorf("%s message %d: logprob %v", tr.ID, i, lp)
							}
						}
					}
					if turns == 0 || turns > 3 {
						t.Errorf("%s: %d assistant turns", tr.ID, turns)
					}
				}
			}
		})
	}
}

func TestScriptedAndUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sft.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "10", "-G", "2", "--policy", "scripted:bisect", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	gs := read(t, out)
	if len(gs) != 10 || *gs[0].Trajectories[0].Reward < 1 {
		t.Errorf("%d groups", len(gs))
	}
	for _, args := range [][]string{
		{"--env", "guess", "--groups", "1", "-o", out},                         // no model
		{"--env", "nope", "--groups", "1", "--policy", "scripted", "-o", out},  // unknown env
		{"--env", "guess", "--policy", "scripted", "-o", out},                  // no --groups
		{"--env", "guess", "--groups", "1", "--policy", "scripted", "--bogus"}, // unknown flag
		{"--env", "guess", "--groups", "1", "--policy", "scripted", "--max-failures", "1.5", "-o", out},
		// unknown scripted policy, found once the scenarios are loaded
		{"--env", "guess", "--groups", "1", "--policy", "scripted:nope", "-o", out},
	} {
		// A refused run has no summary line: one once said "0/1 groups, 0
		// episodes (0 failed) in 0.0s, …, no group finished" above the
		// refusal, as if the run had started and been stopped.
		if r := collectBin(t, args...); r.code != 2 || !strings.Contains(r.stderr, "Run 'hone-collect --help'") || strings.Contains(r.stderr, " episodes (") {
			t.Errorf("%v: exit %d, want 2 pointing to --help, without a summary: %s", args, r.code, r.stderr)
		}
	}
}

// TestStartTimeoutMustBePositive: --start-timeout 0 is refused, naming the
// flag, by a run as by scenarios. A run took 0 for the default minute,
// while its neighbour --episode-timeout reads 0 as no limit and scenarios
// refused it: a user asking for no bound got one without a word.
func TestStartTimeoutMustBePositive(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.parquet")
	for _, args := range [][]string{
		{"--env", "guess", "--groups", "1", "--policy", "scripted", "--start-timeout", "0", "-o", out},
		{"--env", "guess", "--groups", "1", "--policy", "scripted", "--start-timeout=-1s", "-o", out},
		{"scenarios", "--model", "m", "--mcp-url", "http://127.0.0.1:1/mcp", "--start-timeout", "0", "-o", out},
	} {
		if r := collectBin(t, args...); r.code != 2 || !strings.Contains(r.stderr, "--start-timeout") {
			t.Errorf("%v: exit %d, want 2 naming --start-timeout: %s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote %s (%v)", out, err)
	}
}

// A scenario file that is not one is bad input: exit 2, naming the file,
// without sending the user to --help (the flags were right).
func TestBadScenarioFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(bad, []byte(`{"id":"a","split":"dev"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := collectBin(t, "--env", "guess", "--scenarios", bad, "--policy", "scripted", "-o", filepath.Join(dir, "out.parquet"))
	if r.code != 2 || !strings.Contains(r.stderr, bad) || strings.Contains(r.stderr, "--help") {
		t.Fatalf("exit %d, want 2 naming %s without pointing to --help: %s", r.code, bad, r.stderr)
	}
}

// rowsAndSummary reads the file's rows and the summary line's episode
// count.
func rowsAndSummary(t *testing.T, path, stderr string) (rows, said int) {
	t.Helper()
	for _, g := range read(t, path) {
		rows += len(g.Trajectories)
	}
	m := regexp.MustCompile(`hone-collect: \d+/\d+ groups, (\d+) episodes`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary line:\n%s", stderr)
	}
	said, _ = strconv.Atoi(m[1])
	return rows, said
}

// Failed episodes are loud: exit 1 when every episode failed (naming the
// error and what to check) or more than --max-failures did; the file
// still holds every finished group and the summary counts its rows.
func TestFailuresProcess(t *testing.T) {
	dir := t.TempDir()
	t.Run("nothing listening", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := "http://" + ln.Addr().String() + "/v1"
		ln.Close() // nothing listens there now
		out := filepath.Join(dir, "dead.parquet")
		// An explicit --max-failures plays on past a server that refuses
		// every connection (without one the run stops after the first
		// group: TestDeadServerWritesNothing).
		r := collectBin(t, "--env", "guess", "--groups", "2", "-G", "2", "--model", "m", "--base-url", base, "--retries", "0", "--max-failures", "10", "-o", out)
		if r.code != 1 || !strings.Contains(r.stderr, "every episode failed (4 of 4), all with: ") || !strings.Contains(r.stderr, "connection refused") ||
			!strings.Contains(r.stderr, "check that "+base+" is up") || strings.Contains(r.stderr, "NaN") || !strings.Contains(r.stderr, "no episode succeeded") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		gs := read(t, out)
		if len(gs) != 2 || len(gs[0].Trajectories) != 2 || gs[0].Trajectories[0].Error == "" || gs[0].Trajectories[0].Reward != nil {
			t.Fatalf("output: %+v", gs)
		}
		if rows, said := rowsAndSummary(t, out, r.stderr); rows != 4 || said != 4 {
			t.Errorf("%d rows written, summary says %d", rows, said)
		}
	})
	t.Run("max-failures", func(t *testing.T) {
		srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "16"} })
		defer srv.Close()
		// One turn per episode, one episode at a time: attempt 0 of each
		// group fails, attempt 1 ends after its turn. The 3rd failure
		// (group 2, attempt 0) stops the run while group 2's attempt 1
		// waits on its answer: group 2 is neither written nor counted.
		srv.SetFault(func(n int64) openaitest.Fault {
			switch {
			case n >= 6:
				return openaitest.Hang
			case n%2 == 1:
				return openaitest.Status500
			}
			return openaitest.None
		})
		out := filepath.Join(dir, "some.parquet")
		r := collectBin(t, "--env", "guess", "--groups", "10", "-G", "2", "--concurrency", "1", "--max-turns", "1", "--model", "m",
			"--base-url", srv.BaseURL(), "--retries", "0", "--max-failures", "2", "-o", out)
		if r.code != 1 || !strings.Contains(r.stderr, "3 failed, more than --max-failures 2 allows") || !strings.Contains(r.stderr, "HTTP 500") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		gs := read(t, out)
		if len(gs) != 2 || gs[1].Trajectories[0].Error == "" || gs[1].Trajectories[1].Error != "" {
			t.Fatalf("%d groups: %+v", len(gs), gs)
		}
		if rows, said := rowsAndSummary(t, out, r.stderr); rows != 4 || said != 4 || !strings.Contains(r.stderr, "over the 2 that succeeded") {
			t.Errorf("%d rows written, summary says %d: %s", rows, said, r.stderr)
		}
	})
	// --max-failures 0 is ART's gather default: the first failed episode
	// stops the run. Later calls hang, as in max-failures above: group 1's
	// attempt 1 may start before the stop lands, and an answer to it
	// would finish (and write) group 1 too, depending on timing.
	t.Run("max-failures 0 as ART", func(t *testing.T) {
		srv := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "16"} })
		defer srv.Close()
		srv.SetFault(func(n int64) openaitest.Fault {
			switch {
			case n == 2:
				return openaitest.Status500
			case n > 2:
				return openaitest.Hang
			}
			return openaitest.None
		})
		out := filepath.Join(dir, "art.parquet")
		r := collectBin(t, "--env", "guess", "--groups", "10", "-G", "2", "--concurrency", "1", "--max-turns", "1", "--model", "m",
			"--base-url", srv.BaseURL(), "--retries", "0", "--max-failures", "0", "-o", out)
		if r.code != 1 || !strings.Contains(r.stderr, "1 failed, more than --max-failures 0 allows") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if gs := read(t, out); len(gs) != 1 {
			t.Errorf("%d groups written, want the one finished before the failure", len(gs))
		}
	})
}

// SIGINT during a run: exit 130, and the file holds the whole groups
// finished before the stop, and the summary counts exactly its rows.
func TestInterruptProcess(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.parquet")
	// An environment whose 4th and later episodes stall in reset. With
	// two at a time, once the 5th has started both workers are stalled:
	// three episodes have ended, two of one group and one of another,
	// whatever order they ran in. The signal comes then.
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "stdio", "--env-opt", stallEnv(t, dir),
		"--groups", "400", "-G", "2", "--concurrency", "2", "--policy", "scripted", "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitfor.Within(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "resets", "reset-5")); return err == nil }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the 5th episode did not start: %s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr.String())
	}
	gs := read(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("%d groups kept, want 1 whole group: %s", len(gs), stderr.String())
	}
	if rows, said := rowsAndSummary(t, out, stderr.String()); rows != 2 || said != 2 {
		t.Errorf("%d rows written, summary says %d episodes: %s", rows, said, stderr.String())
	}
}

// The recording proxy as a process between an agent written with the
// official Go client and the real hone-serve.
func TestProxyEndToEndServe(t *testing.T) {
	base := startServe(t)
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy", "--upstream", base, "--listen", "127.0.0.1:0", "-o", dir, "--group-size", "1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`proxy listening.*addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	var proxyURL string
	select {
	case a := <-addr:
		proxyURL = "http://" + a
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("proxy did not start")
	}
	client := openai.NewClient(option.WithBaseURL(proxyURL+"/v1"), option.WithAPIKey("none"), option.WithHeader("X-Hone-Trajectory", "e2e-1"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "tiny", MaxTokens: openai.Int(5), Temperature: openai.Float(1),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("range 1-32")}}
	var seen []string
	for _, next := range []string{"higher, range 9-32", ""} {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, resp.Choices[0].Message.Content)
		params.Messages = append(params.Messages, resp.Choices[0].Message.ToParam())
		if next != "" {
			params.Messages = append(params.Messages, openai.UserMessage(next))
		}
	}
	resp, err := http.Post(proxyURL+"/hone/trajectories/e2e-1/reward", "application/json", strings.NewReader(`{"reward":0.25}`))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("reward: %v %v", err, resp)
	}
	// A server stopped by a signal has done its work: exit 0 once drained,
	// as hone-serve (README, "The binaries").
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("proxy after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("proxy did not stop on SIGTERM")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	gs := read(t, files[0])
	tr := gs[0].Trajectories[0]
	if len(files) != 1 || tr.ID != "e2e-1" || *tr.Reward != 0.25 || len(tr.Messages) != 4 {
		t.Fatalf("files %v, trajectory %+v", files, tr)
	}
	for i, k := range []int{1, 3} {
		m := tr.Messages[k]
		if m.Role != "assistant" || m.Content != seen[i] || !m.Trainable || len(m.TokenIDs) == 0 || len(m.Logprobs) != len(m.TokenIDs) || m.AnswerModel != "tiny" {
			t.Errorf("turn %d: %+v (agent saw %q)", i, m, seen[i])
		}
	}
}

// startShoutMCP runs a real MCP server (go-sdk, streamable HTTP) with one
// tool, shout, and one resource, and returns its URL.
func startShoutMCP(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: "upper-case a text"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "file:///greetings.txt", Name: "greetings", Description: "words to shout", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///greetings.txt", Text: "hello"}}}, nil
		})
	mcpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(mcpSrv.Close)
	return mcpSrv.URL
}

// hone-collect scenarios lists a real MCP server's tools and resources
// (go-sdk, streamable HTTP) and shows both to the task writer.
func TestScenariosFromMCP(t *testing.T) {
	mcpURL := startShoutMCP(t)
	llm := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Content: `{"tasks":[{"task":"Shout hello and summarize.","difficulty":1,"answer":"HELLO"},{"task":"Shout each word of the greetings file, then write a summary.","difficulty":3,"answer":""}]}`}
	})
	defer llm.Close()
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	r := collectBin(t, "scenarios", "--mcp-url", mcpURL, "--model", "gen", "--base-url", llm.BaseURL(), "-n", "2", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if want := "hone-collect: 2 tasks for 1 tools and 1 resources; 1 model calls; difficulty 1:1 2:0 3:1 4:0 5:0; dropped none\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	scs, err := collect.ReadScenarios(context.Background(), out)
	if err != nil || len(scs) != 2 || scs[0].Env != "mcp" || string(scs[1].Payload) != `{"task":"Shout each word of the greetings file, then write a summary.","difficulty":3}` {
		t.Fatalf("%v %+v", err, scs)
	}
	prompt := llm.Requests()[0].LastContent()
	for _, want := range []string{`"name": "shout"`, `"description": "upper-case a text"`, `"uri": "file:///greetings.txt"`, `"name": "greetings"`, `"mimeType": "text/plain"`} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %s:\n%s", want, prompt)
		}
	}
}

// hone-collect scenarios refuses a --base-url or $OPENAI_BASE_URL without
// an http(s) scheme and host as bad usage, before it reaches for the MCP
// server (here an address nothing listens on: a run that got that far
// would fail on it instead).
func TestScenariosBaseURLChecked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	for _, args := range [][]string{
		{"scenarios", "--mcp-url", dead, "--model", "gen", "--base-url", "127.0.0.1:8000/v1"},
		{"scenarios", "--mcp-url", dead, "--model", "gen", "--base-url", "ftp://127.0.0.1:1/v1"},
	} {
		r := collectBin(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--base-url") || strings.Contains(r.stderr, "connection refused") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming --base-url", args, r.code, r.stderr)
		}
	}
}

// The repository's example MCP server (stdio, Python): hone-collect
// scenarios writes tasks for its two tools, asking again for a dropped
// one, and the file it writes drives a model run over the same server.
func TestScenariosFromExampleServer(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	server := py + " ../../pipelines/mcp-env-example/server.py"
	replies := []string{
		`{"tasks":[{"task":"What is the capital of Peru? Summarize how you found out.","difficulty":1,"answer":"Lima"},{"task":"Population of Tokyo?","difficulty":2,"answer":"14.0"}]}`,
		`{"tasks":[{"task":"How many millions live in the capital of Kenya? End with a summary of your steps.","difficulty":2,"answer":"4.4"}]}`,
	}
	llm := openaitest.New(nil)
	defer llm.Close()
	llm.Reply = func(r openaitest.Request) openaitest.Reply {
		if n := int(llm.Count()); n <= len(replies) {
			return openaitest.Reply{Content: replies[n-1]}
		}
		// The run: answer each task at once, right for Peru only.
		return openaitest.Reply{Content: "It is Lima."}
	}
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	r := collectBin(t, "scenarios", "--mcp-cmd", server, "--model", "gen", "--base-url", llm.BaseURL(), "-n", "2", "--seed", "7", "--val-fraction", "0.5", "-o", tasks)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if want := "hone-collect: 2 tasks for 2 tools and 0 resources; 2 model calls; difficulty 1:1 2:1 3:0 4:0 5:0; dropped 1 not asking for a summary\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	b, _ := os.ReadFile(tasks)
	want := `{"id":"mcp-7-000","environment":"mcp","payload":{"task":"What is the capital of Peru? Summarize how you found out.","answer":"Lima","difficulty":1},"split":"train"}
{"id":"mcp-7-001","environment":"mcp","payload":{"task":"How many millions live in the capital of Kenya? End with a summary of your steps.","answer":"4.4","difficulty":2},"split":"val"}
`
	if string(b) != want {
		t.Errorf("tasks file:\n%s\nwant:\n%s", b, want)
	}
	reqs := llm.Requests()
	for i, n := range []string{"Write 2 different tasks", "Write 1 different tasks"} {
		p := reqs[i].LastContent()
		if !strings.Contains(p, n) || !strings.Contains(p, `"name": "capital"`) || !strings.Contains(p, `"description": "A city's population, in millions."`) ||
			!strings.Contains(p, `"required": [`) || !strings.Contains(p, "Resources:\nnone\n") || *reqs[i].Seed != int64(7+i) {
			t.Errorf("call %d: %s", i+1, reqs[i].Raw)
		}
	}
	if p := reqs[1].LastContent(); !strings.Contains(p, "already written; do not repeat them:\n- What is the capital of Peru?") {
		t.Errorf("the retry does not show the kept task:\n%s", p)
	}
	out := filepath.Join(dir, "out.parquet")
	r = collectBin(t, "--scenarios", tasks, "--env-opt", "cmd="+server, "-G", "1", "--model", "m", "--base-url", llm.BaseURL(), "-o", out)
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	gs, err := trajectory.ReadFile(context.Background(), out)
	if err != nil || len(gs) != 2 {
		t.Fatalf("%v, %d groups", err, len(gs))
	}
	for _, g := range gs {
		tr := g.Trajectories[0]
		wantReward := map[string]float64{"mcp-7-000": 1, "mcp-7-001": 0}[tr.ScenarioID]
		if tr.Error != "" || tr.Reward == nil || *tr.Reward != wantReward || len(tr.Tools) != 2 || !strings.Contains(tr.Payload, `"difficulty"`) {
			t.Errorf("%s: error %q reward %v payload %s", tr.ScenarioID, tr.Error, tr.Reward, tr.Payload)
		}
	}
}

// Against the real hone-serve (tiny random model), the request's schema
// is enforced by constrained decoding: every reply parses, each task has a
// difficulty from 1 to 5, and the tasks missing after a call (empty texts
// the random model wrote) are asked for again. A random model never asks
// for a summary: with the requirement, no task passes and the run fails
// saying why.
func TestScenariosOnHoneServe(t *testing.T) {
	py := envtest.Python(t, os.Getenv("CI") != "")
	base := startServe(t)
	server := py + " ../../pipelines/mcp-env-example/server.py"
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	args := []string{"scenarios", "--mcp-cmd", server, "--model", "tiny", "--base-url", base, "-n", "3", "--max-tokens", "200", "-o", out}
	r := collectBin(t, append(args, "--no-summary")...)
	if r.code != 0 || !strings.HasPrefix(r.stderr, "hone-collect: 3 tasks for 2 tools and 0 resources; ") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	scs, err := collect.ReadScenarios(context.Background(), out)
	if err != nil || len(scs) != 3 {
		t.Fatalf("%v, %d tasks", err, len(scs))
	}
	for _, sc := range scs {
		var p mcpenv.Payload
		if err := json.Unmarshal(sc.Payload, &p); err != nil || strings.TrimSpace(p.Task) == "" || p.Difficulty < 1 || p.Difficulty > 5 {
			t.Errorf("%s: %v %s", sc.ID, err, sc.Payload)
		}
	}
	r = collectBin(t, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "0 valid tasks of 3 after 5 model calls") || !strings.Contains(r.stderr, "not asking for a summary") {
		t.Errorf("with the summary requirement: exit %d: %s", r.code, r.stderr)
	}
}

// The endpoint and key a flag left empty come from $OPENAI_BASE_URL and
// $OPENAI_API_KEY, read here in the command: the collect packages read no
// environment, nor does the client they build.
func TestEndpointFromEnvironment(t *testing.T) {
	fake := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "16"} })
	defer fake.Close()
	auth := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case auth <- r.Header.Get("Authorization"):
		default:
		}
		fake.Config.Handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	out := filepath.Join(t.TempDir(), "out.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "1", "-G", "1", "--max-turns", "1", "--model", "m", "-o", out)
	if r.code != 0 || fake.Count() != 1 {
		t.Fatalf("exit %d after %d calls to $OPENAI_BASE_URL: %s", r.code, fake.Count(), r.stderr)
	}
	if got := <-auth; got != "Bearer sk-from-env" {
		t.Errorf("Authorization %q, want the key from $OPENAI_API_KEY", got)
	}
}

// SIGINT before the first episode (an environment still starting): exit
// 130, and an existing output file is left as it was, not replaced by an
// empty (0-byte, unreadable) one.
func TestInterruptBeforeFirstEpisodeKeepsOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.parquet")
	old := []byte("the previous run's output")
	os.WriteFile(out, old, 0o644)
	mark := filepath.Join(dir, "started")
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "stdio", "--env-opt", "cmd=sh -c 'touch "+mark+"; exec sleep 600'",
		"--groups", "1", "-G", "1", "--policy", "scripted", "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitfor.Within(60*time.Second, func() bool { _, err := os.Stat(mark); return err == nil }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the environment did not start: %s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr.String())
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, old) {
		t.Errorf("output now %q, want it untouched: %s", got, stderr.String())
	}
}

// TestScenariosFromStdin: --scenarios - reads the scenarios from standard
// input, a pipe here, as "-" is for every stage's inputs (it was "open -:
// no such file").
func TestScenariosFromStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.parquet")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "hone-collect"), "--scenarios", "-", "--env", "guess", "-G", "2", "--policy", "scripted:bisect", "-o", out)
	cmd.Stdin = strings.NewReader(`{"id":"a","payload":{"secret":3,"n":8,"turns":4}}` + "\n" + `{"id":"b","payload":{"secret":7,"n":8,"turns":4}}` + "\n")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var ids []string
	for _, g := range read(t, out) {
		ids = append(ids, g.Trajectories[0].ScenarioID)
	}
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("scenarios played %v, want [a b] from stdin", ids)
	}
}

// TestMaxFailuresStopAdvises: a run stopped by --max-failures gives the
// advice a run whose every episode failed gets: with the first model call
// refused for the model's context, that the prompt is longer than the
// server's context (with the sizes); with a 401 and no episode that
// succeeded, to check the endpoint, the model and the key. Before, the stop
// named the most common error and nothing to do about it.
func TestMaxFailuresStopAdvises(t *testing.T) {
	for _, c := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"context", `{"error":{"message":"This model's maximum context length is 100 tokens. However, your messages resulted in 500 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			http.StatusBadRequest, "the prompt (the system and first user messages and the tool schemas, 500 tokens) is longer than the server's context of 100 tokens"},
		{"401", `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			http.StatusUnauthorized, "is up and serves model \"m\" (--base-url, --model, --api-key)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			out := filepath.Join(t.TempDir(), "o.parquet")
			r := collectBin(t, "--env", "guess", "--groups", "2", "-G", "2", "--concurrency", "1", "--model", "m",
				"--base-url", srv.URL+"/v1", "--retries", "0", "--max-failures", "0", "-o", out)
			if r.code != 1 || !strings.Contains(r.stderr, "more than --max-failures 0 allows") || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, want 1 with %q: %s", r.code, c.want, r.stderr)
			}
		})
	}
}

// TestNegativeFlagsRefused: a negative count or duration is bad usage,
// exit 2 naming the flag, before any episode. Each was taken without a
// word for its unset value (--max-tokens -3 for the server's cap,
// --max-turns -1 and the timeouts for no limit, --retries -1 for none, a
// negative --groups for every scenario of the file), and a negative
// --temperature or a --top-p outside (0, 1] failed every episode with the
// server's 400 only once the run had played them all.
func TestNegativeFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	scs := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(scs, []byte(`{"id":"a","environment":"guess","payload":{"secret":3,"n":8,"turns":2}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.parquet")
	// Nothing listens at the base URL: a run that is not refused fails
	// its episodes at once (no retries), exit 1.
	base := []string{"--scenarios", scs, "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--retries", "0", "-o", out}
	for _, tc := range []struct{ flag, value string }{
		{"--max-tokens", "-3"},
		{"--max-turns", "-1"},
		{"--retries", "-1"},
		{"--episode-timeout", "-1s"},
		{"--request-timeout", "-1s"},
		{"--groups", "-1"},
		{"--temperature", "-1"},
		{"--top-p", "0"},
		{"--top-p", "1.5"},
	} {
		r := collectBin(t, append(slices.Clone(base), tc.flag+"="+tc.value)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.flag+" "+tc.value) {
			t.Errorf("%s %s: exit %d, want 2 naming the flag and its value: %s", tc.flag, tc.value, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote %s (%v)", out, err)
	}
}

// TestScenarioFileWithBOM: a scenario file saved by a Windows tool
// (PowerShell 5's Out-File -Encoding utf8, Notepad's "UTF-8 with BOM")
// starts with a byte-order mark and ends its lines in CRLF. It was
// refused at line 1 with "invalid character 'ï'", where hone-inspect
// from-jsonl reads the same file; its scenarios are played.
func TestScenarioFileWithBOM(t *testing.T) {
	dir := t.TempDir()
	scs := filepath.Join(dir, "tasks.jsonl")
	body := "\ufeff" + `{"id":"a","environment":"guess","payload":{"secret":3,"n":8,"turns":4}}` + "\r\n" +
		`{"id":"b","environment":"guess","payload":{"secret":7,"n":8,"turns":4}}` + "\r\n"
	if err := os.WriteFile(scs, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.parquet")
	r := collectBin(t, "--scenarios", scs, "-G", "2", "--policy", "scripted:bisect", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	gs := read(t, out)
	if len(gs) != 2 || gs[0].Trajectories[0].ScenarioID != "a" || gs[1].Trajectories[0].ScenarioID != "b" {
		t.Fatalf("%d groups: %+v", len(gs), gs)
	}
}

// TestSummaryCountsContextCuts: episodes cut where the conversation
// outgrew the model's context (the server's 400 after a turn, ended as
// --max-turns ends one, no error) are said in the summary. A --max-tokens
// that leaves the second turn no room cut every episode after one turn,
// and the summary read "0 failed" as for a run played to its end. Those
// --max-turns cut are no news and are not counted.
func TestSummaryCountsContextCuts(t *testing.T) {
	base := startServe(t)
	dir := t.TempDir()
	// Each step answers with 1200 bytes: with --max-tokens 3000 the
	// second turn's prompt and completion pass the tiny model's 4096.
	script := filepath.Join(dir, "grow.py")
	os.WriteFile(script, []byte(`import sys, json
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello": r = {"name": "grow", "reward_range": [0, 1]}
    elif op == "scenarios": r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    elif op == "reset": r = {"messages": [{"role": "user", "content": "go"}]}
    else: r = {"messages": [{"role": "user", "content": "x" * 1200}], "reward": 0.5}
    print(json.dumps(r), flush=True)
`), 0o644)
	py := envtest.Python(t, os.Getenv("CI") != "")
	for _, tc := range []struct {
		maxTurns string
		want     string
	}{
		{"0", "4 episodes (0 failed, 4 cut at the model's context)"},
		{"1", "4 episodes (0 failed) in"},
	} {
		out := filepath.Join(dir, "o"+tc.maxTurns+".parquet")
		r := collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" -S "+script, "--groups", "2", "-G", "2", "--max-turns", tc.maxTurns,
			"--model", "tiny", "--base-url", base, "--max-tokens", "3000", "--temperature", "0", "-o", out)
		if r.code != 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--max-turns %s: exit %d, want 0 and %q: %s", tc.maxTurns, r.code, tc.want, r.stderr)
		}
		for _, g := range read(t, out) {
			for _, tr := range g.Trajectories {
				if tr.Error != "" || tr.Metrics["truncated"] != 1 || tr.Metrics["assistant_turns"] != 1 {
					t.Errorf("--max-turns %s: %s: error %q, metrics %v; want one turn, truncated", tc.maxTurns, tr.ID, tr.Error, tr.Metrics)
				}
			}
		}
	}
}

// TestConcurrencyAboveEpisodes: a --concurrency far above the episodes
// there are (a user's "as many as it takes") plays them, one worker an
// episode at most. Workers and their queues were sized by the flag alone:
// a run of two episodes died of "fatal error: out of memory" with a
// goroutine dump.
func TestConcurrencyAboveEpisodes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "1", "-G", "2", "--concurrency", "1099511627776", "--policy", "scripted", "-o", out)
	if r.code != 0 || !strings.Contains(r.stderr, "1/1 groups, 2 episodes (0 failed)") {
		t.Fatalf("exit %d: %.2000s", r.code, r.stderr)
	}
	if gs := read(t, out); len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("%d groups written", len(gs))
	}
}

// TestEnvironmentFailuresBlameTheEnvironment: when every episode failed
// in the environment (a program that exits mid-episode) while the model
// answered each call, the advice names the environment, not the
// endpoint: "check that URL is up and serves model" sent the user to a
// server that had answered every turn.
func TestEnvironmentFailuresBlameTheEnvironment(t *testing.T) {
	base := startServe(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "quit.py")
	os.WriteFile(script, []byte(`import sys, json
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello": r = {"name": "quit", "reward_range": [0, 1]}
    elif op == "scenarios": r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    elif op == "reset": r = {"messages": [{"role": "user", "content": "go"}]}
    else: sys.exit(3)
    print(json.dumps(r), flush=True)
`), 0o644)
	py := envtest.Python(t, os.Getenv("CI") != "")
	out := filepath.Join(dir, "o.parquet")
	r := collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" -S "+script, "--groups", "2", "-G", "2",
		"--model", "tiny", "--base-url", base, "--max-tokens", "4", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "every episode failed (4 of 4)") || !strings.Contains(r.stderr, "exit status 3") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "is up and serves model") || !strings.Contains(r.stderr, "no model call failed; check the environment") {
		t.Errorf("advice blames the endpoint, want the environment: %s", r.stderr)
	}
}

// TestPromptAndEnvironmentFailuresBlameNoEndpoint: when every episode
// failed, some at a first model call refused for the model's context
// and the rest in the environment, no model call failed otherwise: the
// advice names the prompt and the environment, not the endpoint. The
// environment's failures were counted only when they were every one,
// so this mix was told to "check that URL is up and serves model".
func TestPromptAndEnvironmentFailuresBlameNoEndpoint(t *testing.T) {
	base := startServe(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "mixed.py")
	os.WriteFile(script, []byte(`import sys, json
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello": r = {"name": "mixed", "reward_range": [0, 1]}
    elif op == "scenarios": r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    elif op == "reset":
        long = " ".join(str(i) for i in range(6000)) if req["scenario"]["id"] == "s0" else "go"
        r = {"messages": [{"role": "user", "content": long}]}
    else: sys.exit(3)
    print(json.dumps(r), flush=True)
`), 0o644)
	py := envtest.Python(t, os.Getenv("CI") != "")
	out := filepath.Join(dir, "o.parquet")
	r := collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" -S "+script, "--groups", "2", "-G", "1",
		"--model", "tiny", "--base-url", base, "--max-tokens", "4", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "every episode failed (2 of 2)") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"refused for the model's context", "check the environment"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("advice lacks %q: %s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "is up and serves model") {
		t.Errorf("advice blames the endpoint, which answered or refused only for the context: %s", r.stderr)
	}
}

// TestGroupSizeOverflowRefused: a --group-size whose episodes over the
// groups are more than an int counts is bad usage naming the flag,
// exit 2, before any episode. The product wrapped: to 0, which capped
// the workers at none and left the run waiting forever, or below 0,
// which panicked making the queues.
func TestGroupSizeOverflowRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.parquet")
	for _, groups := range []string{"3", "4"} {
		r := collectBin(t, "--env", "guess", "--groups", groups, "-G", "4611686018427387904", "--policy", "scripted", "-o", out)
		if r.code != 2 || !strings.Contains(r.stderr, "--group-size 4611686018427387904") || strings.Contains(r.stderr, "panic") {
			t.Errorf("--groups %s: exit %d, want 2 naming --group-size: %.2000s", groups, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote %s (%v)", out, err)
	}
}

// TestTopPZeroPointsToTemperature: --top-p 0, which OpenAI takes for
// greedy sampling and vLLM and hone-serve refuse, is refused naming the
// flag that does it on every server, --temperature 0; the refusal said
// only what range --top-p wants.
func TestTopPZeroPointsToTemperature(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "1", "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--top-p", "0", "-o", out)
	if r.code != 2 || !strings.Contains(r.stderr, "--top-p 0") || !strings.Contains(r.stderr, "--temperature 0") {
		t.Errorf("exit %d, want 2 naming --top-p 0 and pointing to --temperature 0: %s", r.code, r.stderr)
	}
}

// TestResetTimeoutBlamesTheEnvironment: episodes whose environment did
// not answer its reset within --episode-timeout made no model call, so
// the advice names the environment, not the endpoint. A timeout was
// taken for the model's calls having spent it, even with none made,
// and sent the user to "check that URL is up and serves model".
func TestResetTimeoutBlamesTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "stuck.py")
	os.WriteFile(script, []byte(`import sys, json
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello": r = {"name": "stuck", "reward_range": [0, 1]}
    elif op == "scenarios": r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    else: break  # no answer to reset: wait for stdin's end
    print(json.dumps(r), flush=True)
sys.stdin.read()
`), 0o644)
	py := envtest.Python(t, os.Getenv("CI") != "")
	// Nothing listens at the base URL: no call is made to it.
	r := collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" -S "+script, "--groups", "1", "-G", "2",
		"--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--episode-timeout", "1s", "-o", filepath.Join(dir, "o.parquet"))
	if r.code != 1 || !strings.Contains(r.stderr, "every episode failed (2 of 2)") || !strings.Contains(r.stderr, "episode timeout") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "is up and serves model") || !strings.Contains(r.stderr, "no model call failed; check the environment") {
		t.Errorf("advice blames the endpoint, which no episode called: %s", r.stderr)
	}
}

// stallEnv writes, in dir, a stdio environment whose 4th and later
// episodes stall in reset (each reset claims the next reset-N file in
// dir/resets), and returns the --env-opt that runs it.
func stallEnv(t *testing.T, dir string) string {
	t.Helper()
	script := filepath.Join(dir, "stall.py")
	os.WriteFile(script, []byte(`import sys, json, os, time
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello": r = {"name": "stall", "reward_range": [0, 1], "policies": ["wait"]}
    elif op == "scenarios": r = {"scenarios": [{"id": "s%d" % i} for i in range(req["n"])]}
    elif op == "reset":
        n = 1
        while True:
            try:
                os.close(os.open(os.path.join(sys.argv[1], "reset-%d" % n), os.O_CREAT | os.O_EXCL))
                break
            except FileExistsError:
                n += 1
        if n >= 4: time.sleep(3600)
        r = {"messages": [{"role": "user", "content": "go"}]}
    elif op == "act": r = {"message": {"role": "assistant", "content": "ok"}}
    else: r = {"messages": [], "done": True, "reward": 1}
    print(json.dumps(r), flush=True)
`), 0o644)
	resets := filepath.Join(dir, "resets")
	os.Mkdir(resets, 0o755)
	py := envtest.Python(t, os.Getenv("CI") != "")
	return "cmd=" + py + " -S " + script + " " + resets
}
