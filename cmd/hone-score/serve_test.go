package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/serve"
	"github.com/hone-rl/hone/train/model/modeltest"
	"github.com/hone-rl/hone/train/tinymodel"
)

// startHoneServe runs the real hone-serve server, in this process, over a
// tiny random model, and returns its OpenAI base URL and the model's
// folder. The model's context is 4096 tokens, and its tokenizer spends
// one token per byte.
func startHoneServe(t *testing.T) (base, modelDir string) {
	t.Helper()
	dir := tinyJudgeModel(t)
	return serveJudge(t, serve.Options{Model: dir}), dir
}

// tinyJudgeModel writes the tiny random model startHoneServe serves and
// returns its folder.
func tinyJudgeModel(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	o := tinymodel.Options{Family: "qwen3", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 7, InitStd: 0.5}
	if err := tinymodel.Write(context.Background(), dir, o, ref.New()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serveJudge runs hone-serve with o, in this process, as "tiny-judge" on
// the reference backend, and returns its OpenAI base URL.
func serveJudge(t *testing.T, o serve.Options) string {
	t.Helper()
	o.ServedModelName, o.Backend, o.Log = "tiny-judge", ref.New(), slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := serve.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("hone-serve did not stop")
		}
	})
	return "http://" + ln.Addr().String() + "/v1"
}

// maxAnswerTokens bounds the tokens of any answer that fits the judge
// schema for ids with explanations of at most maxChars characters: every
// token holds at least one byte, so the bound is the longest document in
// bytes, plus the end token. The longest document is the shortest one
// (empty explanations, score 0) with each explanation grown to maxChars
// characters of at most 12 bytes each (a surrogate pair written as two
// \uXXXX escapes) and each score grown to 24 bytes (serve/constrain's
// longest number).
func maxAnswerTokens(t *testing.T, ids []string, maxChars int) int {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"scores":{`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%q:{"explanation":"","score":0}`, id)
	}
	b.WriteString(`}}`)
	shortest := b.String()
	if _, err := judge.Parse(judge.Request{IDs: ids}, shortest); err != nil {
		t.Fatalf("shortest answer %s: %v", shortest, err)
	}
	return len(shortest) + len(ids)*(12*maxChars+23) + 1
}

// TestHoneServeAsJudge runs hone-score against the real hone-serve with a
// tiny random model as the judge. A random model cannot grade, so this
// checks the protocol end to end — request shape, constrained decoding of
// the answer schema, usage accounting, the failure paths — not the
// quality of the scores.
func TestHoneServeAsJudge(t *testing.T) {
	base, _ := startHoneServe(t)
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 2) // 2 groups of 2
	out := filepath.Join(dir, "out.parquet")
	common := []string{"-o", out, "--judge-base-url", base, "--judge-model", "tiny-judge", "--no-judge-cache",
		"--judge-temperature", "0", "--scorer", "ruler"}

	// Default json_schema format: hone-serve decodes under the answer
	// schema (ids as required keys, explanation maxLength, score in [0,1]),
	// so with max_tokens above the longest possible answer every group is
	// scored by its first answer — no retries, no marks.
	const maxChars = 24
	budget := maxAnswerTokens(t, []string{"1", "2"}, maxChars)
	r := runBin(t, nil, nil, append(common, "--judge-explanation-max-chars", fmt.Sprint(maxChars),
		"--judge-max-tokens", fmt.Sprint(budget), "--judge-retries", "0", "--on-judge-error", "fail", in)...)
	if r.code != 0 || !strings.Contains(r.stderr, "judge tiny-judge: 2 calls, 0 cached, 0 retries") {
		t.Fatalf("json_schema with max_tokens %d: exit %d:\n%s", budget, r.code, r.stderr)
	}
	t.Logf("json_schema, max_tokens %d: %s", budget, strings.TrimSpace(r.stderr))
	gs := readBack(t, out)
	if len(gs) != 2 {
		t.Fatalf("%d groups back, want 2", len(gs))
	}
	for _, g := range gs {
		for _, tr := range g.Trajectories {
			if v, ok := component(tr, "ruler"); !ok || v < 0 || v > 1 || tr.Error != "" {
				t.Fatalf("%s: ruler component %v %v, error %q", tr.ID, v, ok, tr.Error)
			}
		}
	}

	// A max_tokens below the shortest answer cuts the JSON off whatever the
	// decoder does: each group is retried once and then marked. The judge
	// failed every group: exit 1, the marked output written.
	r = runBin(t, nil, nil, append(common, "--judge-max-tokens", "12", "--judge-retries", "1", "--on-judge-error", "mark", in)...)
	if r.code != 1 || !strings.Contains(r.stderr, "2 marked") || !strings.Contains(r.stderr, "judge tiny-judge: 4 calls, 0 cached, 2 retries") {
		t.Fatalf("json_schema with max_tokens 12: exit %d:\n%s", r.code, r.stderr)
	}

	// Without a response format the tiny model's text is not a valid
	// answer: each group is retried once and then marked (exit 1 again).
	r = runBin(t, nil, nil, append(common, "--judge-max-tokens", "12", "--judge-response-format", "none", "--judge-retries", "1", "--on-judge-error", "mark", in)...)
	if r.code != 1 || !strings.Contains(r.stderr, "2 marked") || !strings.Contains(r.stderr, "judge tiny-judge: 4 calls, 0 cached, 2 retries") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, " 0 prompt + ") {
		t.Fatalf("hone-serve's token usage was not counted:\n%s", r.stderr)
	}
	gs = readBack(t, out)
	if len(gs) != 2 || !strings.Contains(gs[0].Trajectories[0].Error, "hone-score: scorer ruler:") || !strings.Contains(gs[0].Trajectories[0].Error, "malformed") {
		t.Fatalf("rows not marked as malformed answers: %q", gs[0].Trajectories[0].Error)
	}
}

// TestHoneServeJudgeContext: a group whose prompt is longer than the
// judge's context (ART #473) is refused by hone-serve, the error naming
// --judge-context-tokens; with
// --judge-context-tokens and the judge's tokenizer the prompt is cut to
// fit, and the group is scored by the first answer.
func TestHoneServeJudgeContext(t *testing.T) {
	base, model := startHoneServe(t)
	dir := t.TempDir()
	var g trajectory.Group
	g.ID = "long"
	for i, answer := range []string{"WIN", "lose"} {
		g.Trajectories = append(g.Trajectories, trajectory.Trajectory{
			ID: fmt.Sprintf("long-%d", i), GroupID: "long", Env: "search",
			Tools: []trajectory.Tool{{Name: "search", Description: "Search the notes.", Parameters: `{"type":"object","properties":{"q":{"type":"string"}}}`}},
			Messages: []trajectory.Message{
				{Role: "system", Content: "Find the secret in the notes."},
				{Role: "user", Content: "Go."},
				{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: "search", Arguments: fmt.Sprintf(`{"q":"try %d"}`, i)}}},
				{Role: "tool", ToolCallID: "c1", Content: strings.Repeat(fmt.Sprintf("note %d: nothing here. ", i), 150)}, // 3300 bytes
				{Role: "assistant", Content: answer, Trainable: true},
			},
			Reward: trajectory.Float64(0),
		})
	}
	in := filepath.Join(dir, "long.parquet")
	if err := trajectory.WriteFile(context.Background(), in, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	const maxChars = 24
	answer := maxAnswerTokens(t, []string{"1", "2"}, maxChars)
	common := []string{"-o", out, "--judge-base-url", base, "--judge-model", "tiny-judge", "--no-judge-cache", "--judge-temperature", "0",
		"--judge-explanation-max-chars", fmt.Sprint(maxChars), "--judge-max-tokens", fmt.Sprint(answer), "--judge-retries", "0", "--scorer", "ruler", in}

	// The refusal names the flag that fixes it: the server's own words
	// ("reduce the length of the messages") ask for what a scorer cannot do.
	r := runBin(t, nil, nil, common...)
	if r.code != 1 || !strings.Contains(r.stderr, "maximum context length is 4096 tokens") ||
		!strings.Contains(r.stderr, "--judge-context-tokens N (the judge's context length) cuts it to fit") {
		t.Fatalf("uncut prompt: exit %d (want 1, refused by the judge, naming --judge-context-tokens):\n%s", r.code, r.stderr)
	}

	r = runBin(t, nil, nil, append(common, "--judge-context-tokens", "4096", "--judge-tokenizer", model, "--log-level", "debug")...)
	if r.code != 0 || !strings.Contains(r.stderr, "judge tiny-judge: 1 calls, 0 cached, 0 retries") || !strings.Contains(r.stderr, "texts cut to fit the judge's context") {
		t.Fatalf("cut prompt, max_tokens %d: exit %d:\n%s", answer, r.code, r.stderr)
	}
	t.Logf("cut to fit 4096 tokens with max_tokens %d: %s", answer, r.stderr[strings.LastIndex(r.stderr, "hone-score: "):])
	gs := readBack(t, out)
	for _, tr := range gs[0].Trajectories {
		if v, ok := component(tr, "ruler"); !ok || v < 0 || v > 1 || tr.Error != "" {
			t.Fatalf("%s: ruler component %v %v, error %q", tr.ID, v, ok, tr.Error)
		}
	}
}

// TestHoneServeDivergedJudge: the judge model is an adapter whose step
// diverged, so the real hone-serve answers every judge call with its 500
// of code logits_not_finite. hone-score does not retry it, though
// --judge-retries is left at its default of 2 (the same weights give the
// same NaN; the backoff would add seconds to every group), the marked
// rows carry the server's code and words rather than the bare status,
// and nothing is cached: a second run asks the judge again.
func TestHoneServeDivergedJudge(t *testing.T) {
	modelDir, adapters := tinyJudgeModel(t), t.TempDir()
	modeltest.WriteDivergedRun(t, modelDir, adapters, "r1")
	base := serveJudge(t, serve.Options{Model: modelDir, Adapters: adapters})
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 2) // 2 groups of 2
	out, cache := filepath.Join(dir, "out.parquet"), filepath.Join(dir, "cache")
	args := []string{"-o", out, "--judge-base-url", base, "--judge-model", "r1", "--judge-cache", cache, "--judge-max-tokens", "64",
		"--scorer", "ruler", "--on-judge-error", "mark", in}
	for run := 1; run <= 2; run++ {
		r := runBin(t, nil, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "2 marked") || !strings.Contains(r.stderr, "judge r1: 2 calls, 0 cached, 0 retries") {
			t.Fatalf("run %d: exit %d (want 1, the judge failed every group):\n%s", run, r.code, r.stderr)
		}
		for _, g := range readBack(t, out) {
			for _, tr := range g.Trajectories {
				if !strings.Contains(tr.Error, "HTTP 500 logits_not_finite from "+base+"/chat/completions: no token could be chosen") ||
					!strings.Contains(tr.Error, `model "r1@1" gave NaN`) || !strings.Contains(tr.Error, "serve an earlier step") {
					t.Errorf("run %d: %s: error %q", run, tr.ID, tr.Error)
				}
			}
		}
		if ents, err := os.ReadDir(cache); err == nil && len(ents) > 0 {
			t.Fatalf("run %d: the failed calls left %d entries in the judge cache", run, len(ents))
		}
		resp, err := http.Get(strings.TrimSuffix(base, "/v1") + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf(`hone_serve_no_token_errors_total{code="logits_not_finite"} %d`+"\n", 2*run)
		if !strings.Contains(string(b), want) {
			t.Errorf("run %d: hone-serve's /metrics lacks %q (one call per group, none repeated):\n%s", run, want, b)
		}
	}
}

// TestHoneServeUnknownJudgeModel: a --judge-model the real hone-serve
// does not serve is answered 404 before any call was answered; the run
// stops naming the models the server lists (GET models), as hone-collect
// does for --model, so the user sees the name to give.
func TestHoneServeUnknownJudgeModel(t *testing.T) {
	base, _ := startHoneServe(t)
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 2)
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", base, "--judge-model", "tiny-jduge",
		"--no-judge-cache", "--judge-retries", "0", "--scorer", "ruler", in)
	for _, want := range []string{`judge model "tiny-jduge" answered HTTP 404`, "the server serves: tiny-judge"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Fatalf("exit %d (want 1), stderr:\n%s\nwant it to contain %q", r.code, r.stderr, want)
		}
	}
}

// TestHoneServeJudgeBaseURLWithoutV1: a --judge-base-url without its /v1
// is answered 404 for the chat call and lists no models; the stop says
// that the base URL usually ends in /v1, as hone-collect's does.
func TestHoneServeJudgeBaseURLWithoutV1(t *testing.T) {
	base, _ := startHoneServe(t)
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 2)
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", strings.TrimSuffix(base, "/v1"), "--judge-model", "tiny-judge",
		"--no-judge-cache", "--judge-retries", "0", "--scorer", "ruler", in)
	for _, want := range []string{`judge model "tiny-judge" answered HTTP 404`, "usually ends in /v1"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Fatalf("exit %d (want 1), stderr:\n%s\nwant it to contain %q", r.code, r.stderr, want)
		}
	}
}

// TestHoneServeJudgeMaxTokensOverCap: a --judge-max-tokens over
// hone-serve's --max-tokens is refused with a 400, and the error names
// hone-score's flag, as docs/ruler.md says ("refused with a 400 naming
// it"). It named only the request field, max_completion_tokens, which a
// hone-score user never set.
func TestHoneServeJudgeMaxTokensOverCap(t *testing.T) {
	base := serveJudge(t, serve.Options{Model: tinyJudgeModel(t), MaxTokens: 64})
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", base, "--judge-model", "tiny-judge",
		"--no-judge-cache", "--judge-retries", "0", "--judge-max-tokens", "1000", "--scorer", "ruler", in)
	for _, want := range []string{"HTTP 400", "cap of 64", "--judge-max-tokens 1000"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Fatalf("exit %d (want 1), stderr:\n%s\nwant it to contain %q", r.code, r.stderr, want)
		}
	}
}
