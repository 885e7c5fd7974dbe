package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/serve"
	"github.com/hone-rl/hone/train/tinymodel"
)

// startHoneServe runs the real hone-serve server, in this process, over a
// tiny random model, and returns its OpenAI base URL.
func startHoneServe(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	o := tinymodel.Options{Family: "qwen3", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 7, InitStd: 0.5}
	if err := tinymodel.Write(context.Background(), dir, o, ref.New()); err != nil {
		t.Fatal(err)
	}
	s, err := serve.NewServer(serve.Options{Model: dir, ServedModelName: "tiny-judge",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, ref.New())
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

// TestHoneServeAsJudge runs hone-score against the real hone-serve with a
// tiny random model as the judge. A random model cannot grade, so this
// checks the protocol end to end — request shape, usage accounting, the
// failure paths — not the quality of the scores.
func TestHoneServeAsJudge(t *testing.T) {
	base := startHoneServe(t)
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 2)
	out := filepath.Join(dir, "out.parquet")
	common := []string{"-o", out, "--judge-base-url", base, "--judge-model", "tiny-judge", "--no-judge-cache",
		"--judge-max-tokens", "12", "--judge-temperature", "0", "--scorer", "ruler"}

	// Default: a json_schema response format. Today hone-serve refuses it
	// (no constrained decoding yet: HTTP 400, not retried); once it
	// enforces the schema, every group must come back scored.
	r := runBin(t, nil, nil, append(common, in)...)
	switch {
	case r.code == 1:
		if !strings.Contains(r.stderr, "HTTP 400") || !strings.Contains(r.stderr, "response_format") {
			t.Fatalf("json_schema refused, but not clearly:\n%s", r.stderr)
		}
	case r.code == 0:
		for _, g := range readBack(t, out) {
			for _, tr := range g.Trajectories {
				if v, ok := component(tr, "ruler"); !ok || v < 0 || v > 1 {
					t.Fatalf("%s: ruler component %v %v", tr.ID, v, ok)
				}
			}
		}
	default:
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}

	// Without a response format the tiny model's text is not a valid
	// answer: each group is retried once and then marked.
	r = runBin(t, nil, nil, append(common, "--judge-response-format", "none", "--judge-retries", "1", "--on-judge-error", "mark", in)...)
	if r.code != 0 || !strings.Contains(r.stderr, "2 marked") || !strings.Contains(r.stderr, "judge tiny-judge: 4 calls, 0 cached, 2 retries") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, " 0 prompt + ") {
		t.Fatalf("hone-serve's token usage was not counted:\n%s", r.stderr)
	}
	gs := readBack(t, out)
	if len(gs) != 2 || !strings.Contains(gs[0].Trajectories[0].Error, "hone-score: scorer ruler:") || !strings.Contains(gs[0].Trajectories[0].Error, "malformed") {
		t.Fatalf("rows not marked as malformed answers: %q", gs[0].Trajectories[0].Error)
	}
}
