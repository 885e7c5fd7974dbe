package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/guess"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// runStats is collect.Run with the counts it reports to Summary, which
// must be called exactly once.
func runStats(ctx context.Context, o collect.Options) (collect.Stats, error) {
	var st collect.Stats
	calls := 0
	o.Summary = func(s collect.Stats) { st = s; calls++ }
	err := collect.Run(ctx, o)
	if calls != 1 {
		err = errors.Join(err, fmt.Errorf("Summary called %d times, want once", calls))
	}
	return st, err
}

// bisectReply answers guess-the-number by bisection.
func bisectReply(r openaitest.Request) openaitest.Reply {
	lo, hi, err := guess.ParseRange(r.LastContent())
	if err != nil {
		return openaitest.Reply{Content: "?"}
	}
	return openaitest.Reply{Content: fmt.Sprint((lo + hi) / 2), Model: "myrun@7"}
}

func readGroups(t *testing.T, data []byte) []trajectory.Group {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.parquet")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	gs, err := trajectory.ReadFile(context.Background(), path)
	if err != nil {
		t.Fatalf("reading the output back: %v", err)
	}
	return gs
}

func baseOpts(srv *openaitest.Server, out *bytes.Buffer) collect.Options {
	temp := 0.7
	return collect.Options{
		Env: "guess", Groups: 3, GroupSize: 4, Concurrency: 5, MaxTurns: 10, Seed: 3, Run: "r",
		Policy: "model", Out: out,
		Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "myrun", Temperature: &temp, MaxTokens: 8, Retries: 3, Backoff: time.Millisecond, RequestTimeout: 2 * time.Second},
	}
}

// checkTurns checks that every assistant turn carries exactly what the
// fake server sampled.
func checkTurns(t *testing.T, tr trajectory.Trajectory) {
	t.Helper()
	for i, m := range tr.Messages {
		if m.Role != "assistant" {
			continue
		}
		text := m.Content
		for _, c := range m.ToolCalls {
			text += c.Name + c.Arguments
		}
		ids, lps := openaitest.Tokens(text)
		if !m.Trainable || len(m.TokenIDs) != len(ids) || len(m.Logprobs) != len(lps) || len(ids) == 0 {
			t.Fatalf("%s message %d: trainable %v, %d ids, %d logprobs; want %d", tr.ID, i, m.Trainable, len(m.TokenIDs), len(m.Logprobs), len(ids))
		}
		for k := range ids {
			if m.TokenIDs[k] != ids[k] || math.Abs(float64(m.Logprobs[k])-lps[k]) > 1e-6 {
				t.Fatalf("%s message %d token %d: got (%d, %v), want (%d, %v)", tr.ID, i, k, m.TokenIDs[k], m.Logprobs[k], ids[k], lps[k])
			}
		}
		if m.FinishReason == "" || m.AnswerModel == "" || m.Latency <= 0 {
			t.Errorf("%s message %d: finish %q, model %q, latency %v", tr.ID, i, m.FinishReason, m.AnswerModel, m.Latency)
		}
	}
}

func TestRunModelGuess(t *testing.T) {
	srv := openaitest.New(bisectReply)
	defer srv.Close()
	var out bytes.Buffer
	o := baseOpts(srv, &out)
	var progress []collect.Stats
	o.Progress = func(s collect.Stats) { progress = append(progress, s) }
	st, err := runStats(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	gs := readGroups(t, out.Bytes())
	if len(gs) != 3 || st.Groups != 3 || st.Episodes != 12 || st.Failures != 0 || len(progress) != 4 {
		t.Fatalf("groups %d, stats %+v, progress calls %d", len(gs), st, len(progress))
	}
	// Progress: once with the total before any group is done (so that a
	// progress line shows it from the start), then after each group.
	for i, p := range progress {
		if p.Groups != i || p.Total != 3 {
			t.Fatalf("progress call %d: %d of %d groups, want %d of 3", i, p.Groups, p.Total, i)
		}
	}
	for gi, g := range gs {
		if want := fmt.Sprintf("-g%05d", gi); !strings.HasPrefix(g.ID, "r-s3-e") || !strings.HasSuffix(g.ID, want) || len(g.Trajectories) != 4 {
			t.Fatalf("group %d: id %s, %d trajectories; want r-s3-e…%s, 4", gi, g.ID, len(g.Trajectories), want)
		}
		for _, tr := range g.Trajectories {
			checkTurns(t, tr)
			if tr.Reward == nil || *tr.Reward < 1 || tr.Metrics["found"] != 1 || tr.Error != "" {
				t.Errorf("%s: reward %v, metrics %v, error %q", tr.ID, tr.Reward, tr.Metrics, tr.Error)
			}
			if tr.Env != "guess" || tr.Run != "r" || tr.Model != "myrun" || tr.Adapter != "myrun@7" || tr.Step != 7 || tr.Payload == "" {
				t.Errorf("%s: env %q run %q model %q adapter %q step %d", tr.ID, tr.Env, tr.Run, tr.Model, tr.Adapter, tr.Step)
			}
		}
	}
	for _, r := range srv.Requests() {
		if !r.Logprobs || !r.ReturnTokenIDs || r.Model != "myrun" || r.Temperature == nil || *r.Temperature != 0.7 || r.MaxTokens == nil || *r.MaxTokens != 8 || r.Seed == nil || r.TopP != nil {
			t.Fatalf("request did not ask for logprobs/token ids with the sampling options: %s", r.Raw)
		}
	}
}

// The output's order and content do not depend on concurrency.
func TestDeterministicOrder(t *testing.T) {
	run := func(conc int) []trajectory.Group {
		var out bytes.Buffer
		o := collect.Options{Env: "guess", Groups: 6, GroupSize: 3, Concurrency: conc, MaxTurns: 10, Seed: 9, Run: "d", Policy: "scripted:random-in-range", Out: &out}
		if err := collect.Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		return readGroups(t, out.Bytes())
	}
	a, b := run(1), run(7)
	for gi := range a {
		for ti := range a[gi].Trajectories {
			x, y := a[gi].Trajectories[ti], b[gi].Trajectories[ti]
			if x.ID != y.ID || len(x.Messages) != len(y.Messages) || *x.Reward != *y.Reward {
				t.Fatalf("%s differs between concurrency 1 and 7", x.ID)
			}
			for k := range x.Messages {
				if x.Messages[k].Content != y.Messages[k].Content {
					t.Fatalf("%s message %d differs", x.ID, k)
				}
			}
		}
	}
}

func TestScriptedPolicyNoModel(t *testing.T) {
	var out bytes.Buffer
	o := collect.Options{Env: "guess", Groups: 20, GroupSize: 2, Concurrency: 4, MaxTurns: 10, Seed: 1, Policy: "scripted:bisect", Out: &out}
	st, err := runStats(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if st.MeanReward() < 1 {
		t.Errorf("bisect mean reward %v", st.MeanReward())
	}
	gs := readGroups(t, out.Bytes())
	tr := gs[0].Trajectories[0]
	if tr.Messages[0].Content != "range 1-32" || tr.Messages[1].Role != "assistant" || tr.Messages[1].Content != "16" || tr.Model != "scripted:bisect" {
		t.Errorf("scripted transcript starts %+v", tr.Messages[:2])
	}
	if err := collect.Run(context.Background(), collect.Options{Env: "guess", Groups: 1, GroupSize: 1, Concurrency: 1, Policy: "scripted:nope", Out: &out}); !errors.Is(err, stageerr.ErrUsage) {
		t.Errorf("unknown scripted policy: %v", err)
	}
	// A base URL that is no http(s) URL is bad usage before any episode
	// is played, not a run of failed episodes.
	for _, base := range []string{"localhost:8000/v1", "127.0.0.1:8000/v1", "ftp://127.0.0.1:1/v1"} {
		o := collect.Options{Env: "guess", Groups: 1, GroupSize: 1, Concurrency: 1, Out: &out, Model: collect.ModelOptions{Model: "m", BaseURL: base, Retries: 0}}
		if err := collect.Run(context.Background(), o); !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--base-url") {
			t.Errorf("--base-url %q: %v, want a usage error naming --base-url", base, err)
		}
	}
}

// Tool calls, including malformed ones, go through the loop and the
// malformed ones come back to the model as the tool result.
func TestToolCallsAndMalformed(t *testing.T) {
	var n atomic.Int64
	srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		var last struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		json.Unmarshal(r.Messages[len(r.Messages)-1], &last)
		if last.Role == "tool" && !strings.HasPrefix(last.Content, "error:") {
			return openaitest.Reply{Content: last.Content}
		}
		i := n.Add(1)
		switch i % 3 {
		case 1:
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: fmt.Sprint("a", i), Name: "lookup", Arguments: `{"key":`}}} // bad JSON
		case 2:
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: fmt.Sprint("b", i), Name: "lookup", Arguments: `{"key":5}`}, {ID: fmt.Sprint("c", i), Name: "nope", Arguments: `{}`}}}
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: fmt.Sprint("d", i), Name: "lookup", Arguments: `{"key":"w"}`}}}
	})
	defer srv.Close()
	var out bytes.Buffer
	o := baseOpts(srv, &out)
	o.Env, o.Groups, o.GroupSize, o.Concurrency = "fake", 1, 1, 1
	o.NewEnv = func(context.Context, string, map[string]string) (env.Env, error) { return envtest.Fake{}, nil }
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	tr := readGroups(t, out.Bytes())[0].Trajectories[0]
	checkTurns(t, tr)
	if tr.Metrics["malformed_tool_calls"] != 3 || tr.Metrics["tool_calls"] != 4 || *tr.Reward != 1 {
		t.Fatalf("metrics %v reward %v", tr.Metrics, *tr.Reward)
	}
	var errs []string
	for _, m := range tr.Messages {
		if m.Role == "tool" && strings.HasPrefix(m.Content, "error:") {
			errs = append(errs, m.Content)
		}
	}
	if len(errs) != 3 || !strings.Contains(errs[0], "not a JSON object") || !strings.Contains(errs[1], `"key" should be string`) || !strings.Contains(errs[2], `unknown tool "nope"`) {
		t.Errorf("tool errors fed back: %q", errs)
	}
	if len(tr.Tools) != 1 || tr.Tools[0].Name != "lookup" {
		t.Errorf("tools %+v", tr.Tools)
	}
	// The model saw the tools and the error results.
	reqs := srv.Requests()
	if len(reqs[0].Tools) != 1 || !bytes.Contains(reqs[1].Raw, []byte(`not a JSON object`)) {
		t.Errorf("second request: %s", reqs[1].Raw)
	}
}

func TestScenarioFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	os.WriteFile(path, []byte(`{"id":"a","environment":"guess","payload":{"secret":3,"n":8,"turns":3},"split":"val"}
{"id":"b","payload":{"secret":8,"n":8,"turns":3}}

{"id":"c","payload":{"secret":1,"n":8,"turns":3},"split":"test"}
`), 0o644)
	var out bytes.Buffer
	o := collect.Options{Env: "guess", Scenarios: path, GroupSize: 2, Concurrency: 2, Policy: "scripted:bisect", Out: &out}
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	gs := readGroups(t, out.Bytes())
	if len(gs) != 3 || gs[0].Trajectories[0].ScenarioID != "a" || gs[0].Trajectories[0].Split != "val" || gs[2].Trajectories[1].Split != "test" {
		t.Fatalf("groups from file: %d", len(gs))
	}
	// Each group's metadata names its scenario (ART's TrajectoryGroup.metadata).
	for i, want := range []map[string]string{
		{"scenario_id": "a", "env": "guess", "split": "val", "seed": "0"},
		{"scenario_id": "b", "env": "guess", "seed": "0"},
		{"scenario_id": "c", "env": "guess", "split": "test", "seed": "0"},
	} {
		if !maps.Equal(gs[i].Metadata, want) || gs[i].Metrics != nil {
			t.Errorf("group %d: metadata %v, metrics %v; want %v and none", i, gs[i].Metadata, gs[i].Metrics, want)
		}
	}
	if gs[0].Trajectories[0].Messages[0].Content != "range 1-8" {
		t.Errorf("payload not used: %q", gs[0].Trajectories[0].Messages[0].Content)
	}
	// The Parquet output is a scenario file too.
	pq := filepath.Join(dir, "t.parquet")
	os.WriteFile(pq, out.Bytes(), 0o644)
	scs, err := collect.ReadScenarios(context.Background(), pq)
	if err != nil || len(scs) != 3 || scs[1].ID != "b" || string(scs[1].Payload) != `{"secret":8,"n":8,"turns":3}` {
		t.Fatalf("scenarios from parquet: %v %+v", err, scs)
	}
	for _, bad := range []string{`{"id":"a"}` + "\n" + `{"id":"a"}`, `{"idd":"a"}`, `{"id":"a","split":"dev"}`, `{"payload":1}`} {
		if _, err := collect.DecodeScenarios(strings.NewReader(bad), "x.jsonl"); err == nil || !strings.Contains(err.Error(), "x.jsonl:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestFewerScenariosThanGroupsWarned: --groups past the scenarios a file
// holds (of the split asked for) plays those there are and says so in the
// log (it was silent: a run of 2 groups where 5 were asked for); --groups
// within the file says nothing.
func TestFewerScenariosThanGroupsWarned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(path, []byte(`{"id":"a","environment":"guess","payload":{"secret":3,"n":8,"turns":3}}
{"id":"b","environment":"guess","payload":{"secret":5,"n":8,"turns":3}}
`), 0o644)
	for _, c := range []struct {
		groups int
		warned bool
	}{{5, true}, {2, false}, {0, false}} {
		var out, log bytes.Buffer
		o := collect.Options{Env: "guess", Scenarios: path, Groups: c.groups, GroupSize: 1, Concurrency: 1, Policy: "scripted:bisect", Out: &out,
			Log: slog.New(slog.NewTextHandler(&log, nil))}
		if err := collect.Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if n := len(readGroups(t, out.Bytes())); n != 2 {
			t.Errorf("--groups %d: %d groups played, want 2", c.groups, n)
		}
		warned := strings.Contains(log.String(), "fewer scenarios than --groups") && strings.Contains(log.String(), "available=2")
		if warned != c.warned {
			t.Errorf("--groups %d: warned %v, want %v; log:\n%s", c.groups, warned, c.warned, log.String())
		}
	}
}

// --split plays one split of a scenario file, and labels generated
// scenarios (an eval set for hone-inspect log-eval).
func TestSplit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	os.WriteFile(path, []byte(`{"id":"a","environment":"guess","payload":{"secret":3,"n":8,"turns":3},"split":"val"}
{"id":"b","payload":{"secret":8,"n":8,"turns":3},"split":"train"}
{"id":"c","payload":{"secret":1,"n":8,"turns":3},"split":"val"}
{"id":"d","payload":{"secret":2,"n":8,"turns":3}}
`), 0o644)
	var out bytes.Buffer
	o := collect.Options{Env: "guess", Scenarios: path, Split: "val", GroupSize: 1, Concurrency: 2, Policy: "scripted:bisect", Out: &out}
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range readGroups(t, out.Bytes()) {
		ids = append(ids, g.Trajectories[0].ScenarioID+":"+g.Trajectories[0].Split)
	}
	if strings.Join(ids, " ") != "a:val c:val" {
		t.Errorf("--split val played %v", ids)
	}
	o.Split, out = "test", bytes.Buffer{}
	if err := collect.Run(context.Background(), o); !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), `none of its 4 scenarios is of split "test" (it has 1 without a split (train), 1 train, 2 val)`) {
		t.Errorf("no scenario of the split: %v", err)
	}
	o.Split = "dev"
	if err := collect.Run(context.Background(), o); !errors.Is(err, stageerr.ErrUsage) {
		t.Errorf("--split dev: %v", err)
	}
	out = bytes.Buffer{}
	gen := collect.Options{Env: "guess", Groups: 3, GroupSize: 1, Concurrency: 1, Seed: 800001, Split: "val", Policy: "scripted:bisect", Out: &out}
	if err := collect.Run(context.Background(), gen); err != nil {
		t.Fatal(err)
	}
	for _, g := range readGroups(t, out.Bytes()) {
		if g.Trajectories[0].Split != "val" {
			t.Errorf("generated scenario %s has split %q, want val", g.Trajectories[0].ScenarioID, g.Trajectories[0].Split)
		}
		if want := map[string]string{"scenario_id": g.Trajectories[0].ScenarioID, "env": "guess", "split": "val", "seed": "800001"}; !maps.Equal(g.Metadata, want) {
			t.Errorf("generated group metadata %v, want %v", g.Metadata, want)
		}
	}
}

// Faults: retries get through transient errors; persistent ones become
// rows with Error set; --max-failures aborts.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault openaitest.Fault
	}{{"500", openaitest.Status500}, {"429", openaitest.Status429}, {"drop", openaitest.Drop}, {"truncate", openaitest.Truncate}, {"hang", openaitest.Hang}} {
		t.Run(tc.name+"/transient", func(t *testing.T) {
			srv := openaitest.New(bisectReply)
			defer srv.Close()
			srv.SetFault(func(n int64) openaitest.Fault {
				if n%3 == 1 && n < 12 { // a few requests fail once; the retry succeeds
					return tc.fault
				}
				return openaitest.None
			})
			var out bytes.Buffer
			o := baseOpts(srv, &out)
			o.Groups, o.GroupSize, o.Concurrency = 2, 2, 1
			o.Model.RequestTimeout = 150 * time.Millisecond
			st, err := runStats(context.Background(), o)
			if err != nil || st.Failures != 0 {
				t.Fatalf("err %v, stats %+v", err, st)
			}
			for _, g := range readGroups(t, out.Bytes()) {
				for _, tr := range g.Trajectories {
					checkTurns(t, tr)
				}
			}
		})
	}
	t.Run("persistent", func(t *testing.T) {
		srv := openaitest.New(bisectReply)
		defer srv.Close()
		srv.SetFault(func(n int64) openaitest.Fault { return openaitest.Status500 })
		var out bytes.Buffer
		o := baseOpts(srv, &out)
		o.Groups, o.GroupSize, o.Concurrency = 2, 2, 2
		o.Model.Retries = 2
		st, err := runStats(context.Background(), o)
		// Every episode failed: the run fails, naming the error, and the
		// groups are still written, each failure a row with its error.
		if !errors.Is(err, collect.ErrAllFailed) || st.Failures != 4 || !strings.Contains(err.Error(), "all with: ") ||
			!strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), srv.BaseURL()) {
			t.Fatalf("err %v, stats %+v", err, st)
		}
		if sum := st.String(); strings.Contains(sum, "NaN") || !strings.Contains(sum, "4 episodes (4 failed)") || !strings.Contains(sum, "no episode succeeded") {
			t.Errorf("summary %q", sum)
		}
		if got := srv.Count(); got != 12 {
			t.Errorf("%d requests, want 4 episodes × 3 attempts", got)
		}
		gs := readGroups(t, out.Bytes())
		if len(gs) != 2 {
			t.Fatalf("%d groups", len(gs))
		}
		for _, g := range gs {
			for _, tr := range g.Trajectories {
				if !strings.Contains(tr.Error, "HTTP 500") || tr.Reward != nil || len(tr.Messages) != 1 {
					t.Errorf("%s: error %q reward %v", tr.ID, tr.Error, tr.Reward)
				}
			}
		}
	})
	t.Run("max-failures", func(t *testing.T) {
		srv := openaitest.New(bisectReply)
		defer srv.Close()
		// Calls after the 5th hang: with one worker, group 2's second
		// episode could fail and finish (and write) group 2 before the
		// stop landed, 6 runs in 1000.
		srv.SetFault(func(n int64) openaitest.Fault {
			if n > 5 {
				return openaitest.Hang
			}
			return openaitest.Status500
		})
		var out bytes.Buffer
		o := baseOpts(srv, &out)
		o.Groups, o.GroupSize, o.Concurrency = 20, 2, 1
		o.Model.Retries, o.MaxFailures = 0, "0.1"
		st, err := runStats(context.Background(), o)
		// The 5th failure (group 2's first attempt) stops the run; the
		// stats count the 4 rows written, not that unfinished episode.
		if !errors.Is(err, collect.ErrTooManyFailures) || !strings.Contains(err.Error(), "5 failed, more than --max-failures 0.1 allows (4 of 40 episodes)") ||
			!strings.Contains(err.Error(), "HTTP 500") || st.Groups != 2 || st.Episodes != 4 || st.Failures != 4 {
			t.Fatalf("err %v, stats %+v", err, st)
		}
		if gs := readGroups(t, out.Bytes()); len(gs) != 2 {
			t.Errorf("%d whole groups written before the abort, want 2", len(gs))
		}
	})
	t.Run("episode-timeout", func(t *testing.T) {
		srv := openaitest.New(bisectReply)
		defer srv.Close()
		srv.SetFault(func(n int64) openaitest.Fault { return openaitest.Hang })
		var out bytes.Buffer
		o := baseOpts(srv, &out)
		o.Groups, o.GroupSize = 1, 2
		o.Timeout = 200 * time.Millisecond
		st, err := runStats(context.Background(), o)
		if !errors.Is(err, collect.ErrAllFailed) || !strings.Contains(err.Error(), "episode timeout") || st.Failures != 2 {
			t.Fatalf("err %v stats %+v", err, st)
		}
		tr := readGroups(t, out.Bytes())[0].Trajectories[0]
		if !strings.Contains(tr.Error, "episode timeout") {
			t.Errorf("error %q", tr.Error)
		}
	})
}

// A stop writes the finished groups and nothing partial.
func TestInterrupt(t *testing.T) {
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := openaitest.New(bisectReply)
	defer srv.Close()
	srv.SetFault(func(i int64) openaitest.Fault {
		if n.Add(1) > 80 { // after a few groups, everything hangs and we stop
			cancel()
			return openaitest.Hang
		}
		return openaitest.None
	})
	var out bytes.Buffer
	o := baseOpts(srv, &out)
	o.Groups, o.GroupSize, o.Concurrency = 50, 2, 3
	st, err := runStats(ctx, o)
	if !errors.Is(err, stageerr.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	gs := readGroups(t, out.Bytes())
	if len(gs) == 0 || len(gs) != st.Groups || len(gs) >= 50 {
		t.Fatalf("%d groups written, stats %+v", len(gs), st)
	}
	for _, g := range gs {
		if len(g.Trajectories) != 2 {
			t.Fatalf("group %s has %d trajectories", g.ID, len(g.Trajectories))
		}
		for _, tr := range g.Trajectories {
			if tr.Error != "" {
				t.Errorf("%s: %s", tr.ID, tr.Error)
			}
		}
	}
}

// Some episodes fail, some succeed: no error, and the summary's mean is
// over the ones that succeeded, which it says.
func TestSomeFailed(t *testing.T) {
	srv := openaitest.New(bisectReply)
	defer srv.Close()
	srv.SetFault(func(n int64) openaitest.Fault {
		if n == 1 {
			return openaitest.Status500
		}
		return openaitest.None
	})
	var out bytes.Buffer
	o := baseOpts(srv, &out)
	o.Groups, o.GroupSize, o.Concurrency = 2, 2, 1
	o.Model.Retries = 0
	st, err := runStats(context.Background(), o)
	if err != nil || st.Episodes != 4 || st.Failures != 1 || st.Rewarded != 3 {
		t.Fatalf("err %v, stats %+v", err, st)
	}
	if sum := st.String(); !strings.Contains(sum, "over the 3 that succeeded") {
		t.Errorf("summary %q", sum)
	}
}

// stallEnv is envtest.Fake whose episodes stall in Reset until the run
// stops, except the attempts at scenario 0 and the first attempt at
// scenario 1. With two workers, the second stalled episode means every
// other episode has finished and been handed over: group 0 is whole,
// group 1 is not.
type stallEnv struct {
	envtest.Fake
	first, second string // scenario ids

	mu      sync.Mutex
	seen    map[string]int
	stalled int
	onStall func(stalled int)
}

func (e *stallEnv) NewEpisode(ctx context.Context, sc env.Scenario, seed int64) (env.Episode, error) {
	e.mu.Lock()
	n := e.seen[sc.ID]
	e.seen[sc.ID]++
	stall := sc.ID != e.first && (sc.ID != e.second || n > 0)
	if stall {
		e.stalled++
	}
	stalled := e.stalled
	e.mu.Unlock()
	if !stall {
		return e.Fake.NewEpisode(ctx, sc, seed)
	}
	e.onStall(stalled)
	return stalledEpisode{}, nil
}

type stalledEpisode struct{}

func (stalledEpisode) Reset(ctx context.Context) (env.Observation, error) {
	<-ctx.Done()
	return env.Observation{}, ctx.Err()
}
func (stalledEpisode) Step(context.Context, env.Turn) (env.Feedback, error) {
	return env.Feedback{}, errors.New("stalled episode stepped")
}
func (stalledEpisode) Outcome() env.Outcome { return env.Outcome{} }
func (stalledEpisode) Close() error         { return nil }

// A stop counts exactly the rows written: group 1's finished attempt is
// neither written nor counted.
func TestInterruptCountsWritten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &stallEnv{first: "fake-4-0", second: "fake-4-1", seen: map[string]int{}, onStall: func(n int) {
		if n == 2 {
			cancel()
		}
	}}
	var out bytes.Buffer
	o := collect.Options{Env: "fake", Groups: 5, GroupSize: 2, Concurrency: 2, MaxTurns: 10, Seed: 4, Run: "r",
		Policy: "scripted:lookup", Out: &out, NewEnv: func(context.Context, string, map[string]string) (env.Env, error) { return e, nil }}
	st, err := runStats(ctx, o)
	if !errors.Is(err, stageerr.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	gs := readGroups(t, out.Bytes())
	rows := 0
	for _, g := range gs {
		rows += len(g.Trajectories)
	}
	if len(gs) != 1 || gs[0].Trajectories[0].ScenarioID != "fake-4-0" || st.Groups != 1 || st.Episodes != rows || st.Failures != 0 || st.Rewarded != rows {
		t.Fatalf("%d groups, %d rows written; stats %+v", len(gs), rows, st)
	}
	if sum := st.String(); !strings.Contains(sum, "1/5 groups, 2 episodes (0 failed)") {
		t.Errorf("summary %q", sum)
	}
}

// TestStepFromServedName: a trajectory's step is N of the "<run>@<N>" that
// answered, spelled as hone-serve spells it; any other answering model
// records step 0 (its name still goes to the adapter column). Before, the
// digits after the last "@" of any name were taken: "org/model@2024" gave
// step 2024 and "myrun@-1" step -1.
func TestStepFromServedName(t *testing.T) {
	for answer, want := range map[string]int64{
		"myrun@7": 7, "myrun@0": 0, "myrun": 0, "qwen3-0.6b": 0,
		"org/model@2024": 0, "myrun@-1": 0, "myrun@07": 0, "a@b@3": 0,
	} {
		srv := openaitest.New(func(r openaitest.Request) openaitest.Reply {
			rep := bisectReply(r)
			rep.Model = answer
			return rep
		})
		var out bytes.Buffer
		o := baseOpts(srv, &out)
		o.Groups, o.GroupSize, o.Concurrency = 1, 1, 1
		err := collect.Run(context.Background(), o)
		srv.Close()
		if err != nil {
			t.Fatalf("answered by %q: %v", answer, err)
		}
		tr := readGroups(t, out.Bytes())[0].Trajectories[0]
		if tr.Step != want || tr.Adapter != answer {
			t.Errorf("answered by %q: step %d, adapter %q; want step %d", answer, tr.Step, tr.Adapter, want)
		}
	}
}

// A stdio run's output replays as a scenario file: its rows name the
// program's own environment name (hello's, "arith"), which is no built-in
// environment, so the scenarios play in --env stdio.
func TestReplayStdioOutput(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	script, _ := filepath.Abs("../pipelines/stdio-env-example/env.py")
	o := collect.Options{Env: "stdio", EnvOpts: map[string]string{"cmd": py + " -S " + script}, Groups: 2, GroupSize: 1, Concurrency: 2, Seed: 1, Run: "r", Policy: "scripted:calculator"}
	var first bytes.Buffer
	o.Out = &first
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(t.TempDir(), "first.parquet")
	os.WriteFile(pq, first.Bytes(), 0o644)
	var again bytes.Buffer
	o.Out, o.Scenarios, o.Groups = &again, pq, 0
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatalf("replaying %s: %v", pq, err)
	}
	gs := readGroups(t, again.Bytes())
	if len(gs) != 2 || gs[0].Trajectories[0].ScenarioID != "arith-1-0" || gs[0].Trajectories[0].Env != "arith" || gs[0].Trajectories[0].Error != "" {
		t.Fatalf("replayed groups: %+v", gs)
	}
}

// --policy scripted with a stdio program that names no policies in its
// hello is refused as bad usage, rather than crashing the run.
func TestScriptedWithoutPolicies(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	script := filepath.Join(t.TempDir(), "env.py")
	os.WriteFile(script, []byte(`import sys, json
for line in sys.stdin:
    r = json.loads(line)
    if r["op"] == "hello":
        print(json.dumps({"name": "np"}), flush=True)
    elif r["op"] == "scenarios":
        print(json.dumps({"scenarios": [{"id": "s%d" % i} for i in range(r["n"])]}), flush=True)
    elif r["op"] == "reset":
        print(json.dumps({"messages": [{"role": "user", "content": "hi"}]}), flush=True)
    else:
        print(json.dumps({"done": True, "reward": 1}), flush=True)
`), 0o644)
	var out bytes.Buffer
	o := collect.Options{Env: "stdio", EnvOpts: map[string]string{"cmd": py + " -S " + script}, Groups: 1, GroupSize: 1, Concurrency: 1, Run: "r", Policy: "scripted", Out: &out}
	err = collect.Run(context.Background(), o)
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "no scripted polic") {
		t.Fatalf("got %v, want a usage error saying the environment has no scripted policy", err)
	}
	// And what to do: the message once named only the lack, leaving a
	// reader of docs/stdio-env.md to guess that hello's "policies" is
	// where they come from, or that a model plays without one.
	for _, want := range []string{`"policies"`, "--model"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not mention %s", err, want)
		}
	}
}

// A scenario line holds one JSON object: a second one on the same line
// (objects written without newlines between them), or anything after the
// first, is an error naming the line, not dropped unread.
func TestScenarioLineHoldsOneObject(t *testing.T) {
	for _, bad := range []string{`{"id":"a"} {"id":"b"}`, `{"id":"a"}{"id":"b"}`, `{"id":"a"} x`, `{"id":"a"},`} {
		scs, err := collect.DecodeScenarios(strings.NewReader(`{"id":"z"}`+"\n"+bad+"\n"), "x.jsonl")
		if err == nil || !strings.Contains(err.Error(), "x.jsonl:2:") {
			t.Errorf("%q: %d scenarios, error %v; want one naming x.jsonl:2", bad, len(scs), err)
		}
	}
	scs, err := collect.DecodeScenarios(strings.NewReader(`{"id":"a"}  `+"\r\n"), "x.jsonl")
	if err != nil || len(scs) != 1 {
		t.Errorf("trailing spaces: %+v, %v", scs, err)
	}
}

// A scenario file with no scenario in it (empty, blank lines only, or a
// Parquet file without rows) is bad input naming the file, as a file with
// none of the --split asked for is: not a run that plays nothing, writes
// an empty output and succeeds.
func TestNoScenariosInFile(t *testing.T) {
	dir := t.TempDir()
	var empty bytes.Buffer
	w := trajectory.NewWriter(&empty, trajectory.WriterOptions{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"empty.jsonl": nil, "blank.jsonl": []byte("\n  \n"), "empty.parquet": empty.Bytes()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		o := collect.Options{Env: "guess", Scenarios: path, GroupSize: 1, Concurrency: 1, Policy: "scripted:bisect", Out: &out}
		if _, err := runStats(context.Background(), o); !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want bad input naming the file", name, err)
		}
	}
}

// --max-failures as a fraction allows exactly that share of the episodes:
// 29 failed of 100 is 0.29 of them, not more, though 0.29·100 is
// 28.999… in floating point.
func TestMaxFailuresFractionExact(t *testing.T) {
	var lines strings.Builder
	for i := range 100 {
		secret := 3
		if i*29/100 != (i+1)*29/100 { // 29 of the 100, spread out
			secret = 0 // outside 1..n: the episode fails to start
		}
		fmt.Fprintf(&lines, `{"id":"s%d","payload":{"secret":%d,"n":8,"turns":3}}`+"\n", i, secret)
	}
	if n := strings.Count(lines.String(), `"secret":0`); n != 29 {
		t.Fatalf("%d bad scenarios, want 29", n)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := collect.Options{Env: "guess", Scenarios: path, GroupSize: 1, Concurrency: 2, Policy: "scripted:bisect", MaxFailures: "0.29", Out: &out}
	st, err := runStats(context.Background(), o)
	if err != nil || st.Failures != 29 || st.Episodes != 100 {
		t.Errorf("29 of 100 failed with --max-failures 0.29: %v (%d of %d failed); want the run to finish", err, st.Failures, st.Episodes)
	}
	// NaN is no fraction: refused, not taken as no limit.
	o.MaxFailures = "NaN"
	if _, err := runStats(context.Background(), o); !errors.Is(err, stageerr.ErrUsage) {
		t.Errorf("--max-failures NaN: %v; want bad usage", err)
	}
}

// slowCloseEnv is envtest.Fake whose episodes, once played, take until
// release to close, as a stdio program that does not exit on its closed
// stdin takes 0.5 s before it is killed; each says closing when it starts
// to.
type slowCloseEnv struct {
	envtest.Fake
	closing chan struct{}
	release chan struct{}
}

func (e *slowCloseEnv) NewEpisode(ctx context.Context, sc env.Scenario, seed int64) (env.Episode, error) {
	ep, err := e.Fake.NewEpisode(ctx, sc, seed)
	if err != nil {
		return nil, err
	}
	return slowClose{Episode: ep, e: e}, nil
}

type slowClose struct {
	env.Episode
	e *slowCloseEnv
}

func (c slowClose) Close() error {
	c.e.closing <- struct{}{}
	<-c.e.release
	return c.Episode.Close()
}

// An episode that finished before a stop is kept, with its group, even
// when its worker hands it over after the stop: here every episode was
// played to the end and is closing when the run stops. Each was dropped
// or kept at random (the hand-over raced the stop), and with it the
// whole group it finished.
func TestInterruptKeepsEpisodesFinishedBeforeIt(t *testing.T) {
	const groups = 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &slowCloseEnv{closing: make(chan struct{}), release: make(chan struct{})}
	var out bytes.Buffer
	o := collect.Options{Env: "fake", Groups: groups, GroupSize: 1, Concurrency: groups, MaxTurns: 10, Seed: 4, Run: "r",
		Policy: "scripted:lookup", Out: &out, NewEnv: func(context.Context, string, map[string]string) (env.Env, error) { return e, nil }}
	done := make(chan error, 1)
	var st collect.Stats
	go func() {
		var err error
		st, err = runStats(ctx, o)
		done <- err
	}()
	for range groups {
		<-e.closing
	}
	cancel()
	close(e.release)
	if err := <-done; !errors.Is(err, stageerr.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if gs := readGroups(t, out.Bytes()); len(gs) != groups || st.Groups != groups {
		t.Fatalf("%d of the %d finished groups written (stats %+v)", len(gs), groups, st)
	}
}

// failingEnv's episodes fail at once, in Reset, for a reason of their
// own; its scripted policies say when they are closed, which a worker
// does once the episode has ended.
type failingEnv struct {
	envtest.Fake
	closed chan struct{}
}

func (e *failingEnv) NewEpisode(context.Context, env.Scenario, int64) (env.Episode, error) {
	return failingEpisode{}, nil
}

func (e *failingEnv) Policy(string, int64) (env.Policy, error) { return closingPolicy{e.closed}, nil }

type failingEpisode struct{ stalledEpisode }

func (failingEpisode) Reset(context.Context) (env.Observation, error) {
	return env.Observation{}, errors.New("boom")
}

type closingPolicy struct{ closed chan struct{} }

func (closingPolicy) Act(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
	return trajectory.Message{}, errors.New("a failed reset was played")
}
func (p closingPolicy) Close() error { p.closed <- struct{}{}; return nil }

// gateHandler holds the first "episode failed" log record, which Run
// writes as it takes the failure, until release is closed.
type gateHandler struct {
	once    *sync.Once
	taken   chan struct{}
	release chan struct{}
}

func (h gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "episode failed" {
		h.once.Do(func() { close(h.taken); <-h.release })
	}
	return nil
}
func (h gateHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h gateHandler) WithGroup(string) slog.Handler      { return h }

// TestStopKeepsEpisodesFailedBefore: an episode that failed on its own
// before a stop (Ctrl-C) is a finished episode, written with its error
// like any other, and its group with it. Run left out every failed
// episode it took after the stop, as if the stop had cut it short: here
// both episodes of the one group failed before the stop, Run took the
// second after it, and the whole group was lost.
func TestStopKeepsEpisodesFailedBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &failingEnv{closed: make(chan struct{}, 2)}
	h := gateHandler{once: &sync.Once{}, taken: make(chan struct{}), release: make(chan struct{})}
	var out bytes.Buffer
	o := collect.Options{Env: "fake", Groups: 1, GroupSize: 2, Concurrency: 2, Seed: 4, Run: "r", Log: slog.New(h),
		Policy: "scripted", Out: &out, NewEnv: func(context.Context, string, map[string]string) (env.Env, error) { return e, nil }}
	done := make(chan error, 1)
	go func() { done <- collect.Run(ctx, o) }()
	<-h.taken  // Run is taking the first failure
	<-e.closed // both episodes have ended, on their own
	<-e.closed
	cancel()
	close(h.release)
	if err := <-done; !errors.Is(err, stageerr.ErrInterrupted) {
		t.Fatalf("Run: %v; want an interruption", err)
	}
	gs := readGroups(t, out.Bytes())
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("%d groups written, want the one whose episodes both failed before the stop", len(gs))
	}
	for _, tr := range gs[0].Trajectories {
		if !strings.Contains(tr.Error, "boom") {
			t.Errorf("row %s: error %q, want boom", tr.ID, tr.Error)
		}
	}
}

// With a scenarios file and --policy scripted, an environment without a
// scripted policy is refused before the run warns of fewer scenarios
// than --groups: the warning was logged first, about a run that then did
// not start, and read as the reason it did not.
func TestScriptedRefusedBeforeFewerWarning(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	dir := t.TempDir()
	script, scenarios := filepath.Join(dir, "env.py"), filepath.Join(dir, "s.jsonl")
	os.WriteFile(script, []byte(`import sys, json
for line in sys.stdin:
    print(json.dumps({"name": "np"}), flush=True)
`), 0o644)
	os.WriteFile(scenarios, []byte(`{"id":"a","environment":"stdio"}`+"\n"+`{"id":"b","environment":"stdio"}`+"\n"), 0o644)
	var out, log bytes.Buffer
	o := collect.Options{Env: "stdio", EnvOpts: map[string]string{"cmd": py + " -S " + script}, Scenarios: scenarios, Groups: 5, GroupSize: 1, Concurrency: 1, Run: "r", Policy: "scripted", Out: &out,
		Log: slog.New(slog.NewTextHandler(&log, nil))}
	err = collect.Run(context.Background(), o)
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "no scripted polic") {
		t.Fatalf("got %v, want a usage error saying the environment has no scripted policy", err)
	}
	if strings.Contains(log.String(), "fewer scenarios") {
		t.Errorf("the run was refused, yet warned of fewer scenarios first; log:\n%s", log.String())
	}
}
