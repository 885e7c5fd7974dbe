package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestInPlaceKeepsInputWhenNotComplete re-scores a file in place (-o
// names the input), as one does with --only-missing. A run stopped by
// Ctrl-C keeps the groups finished before the stop, and a judge that
// failed every group under mark keeps what it could write: in place,
// that output replaced the whole input, and the other groups' rows were
// lost. The input is now left as it was, saying why, with the run's exit
// code; a run that completes still writes in place.
func TestInPlaceKeepsInputWhenNotComplete(t *testing.T) {
	dir := t.TempDir()
	orig := scenario(t, dir, "orig.parquet", 0, 3, 2)
	want, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() string {
		p := filepath.Join(t.TempDir(), "rollouts.parquet")
		if err := os.WriteFile(p, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unchanged := func(t *testing.T, p, stderr string) {
		t.Helper()
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the input was changed (%d groups left):\n%s", len(readBack(t, p)), stderr)
		}
		if !strings.Contains(stderr, "left as it was") {
			t.Fatalf("no word that the input was left as it was:\n%s", stderr)
		}
	}

	t.Run("judge failed every group", func(t *testing.T) {
		p := fresh()
		srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Content: "not json"} })
		r := runBin(t, nil, nil, "-o", p, "--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache",
			"--judge-retries", "0", "--on-judge-error", "mark", "--scorer", "ruler", p)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", r.code, r.stderr)
		}
		unchanged(t, p, r.stderr)
	})

	t.Run("interrupted", func(t *testing.T) {
		p := fresh()
		unchanged(t, p, interruptAfterFirstGroup(t, p, p))
	})

	t.Run("complete", func(t *testing.T) {
		p := fresh()
		if r := runBin(t, nil, nil, "-o", p, "--scorer", "env", "--scorer", "final=formula:win * 2", p); r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
		gs := readBack(t, p)
		if len(gs) != 3 {
			t.Fatalf("%d groups in place, want 3", len(gs))
		}
		if _, ok := component(gs[0].Trajectories[0], "final"); !ok {
			t.Fatalf("not scored in place: %+v", gs[0].Trajectories[0].RewardComponents)
		}
	})
}

// TestShardInPlaceRefused: --shard 0/2 with -o naming the input wrote
// its half of the groups over the whole file, exit 0, and the other
// half was gone. It is refused now (exit 2), the file left as it was.
func TestShardInPlaceRefused(t *testing.T) {
	dir := t.TempDir()
	p := scenario(t, dir, "rollouts.parquet", 0, 4, 2)
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, nil, "-o", p, "--shard", "0/2", "--scorer", "env", p)
	if got, _ := os.ReadFile(p); r.code != 2 || !bytes.Equal(got, want) || !strings.Contains(r.stderr, "--shard 0/2") {
		t.Fatalf("exit %d (want 2), input unchanged %v (%d groups left):\n%s", r.code, bytes.Equal(got, want), len(readBack(t, p)), r.stderr)
	}
}

// TestShardInPlaceRefusedFileURL: -o file:///…/x.parquet with x.parquet
// as the input (or the other way round) is re-scoring in place as much
// as the same path twice, and --shard wrote its part over the whole
// file: the check compared the names as written and stat'ed the URL as a
// path, which no file has.
func TestShardInPlaceRefusedFileURL(t *testing.T) {
	dir := t.TempDir()
	p := scenario(t, dir, "rollouts.parquet", 0, 4, 2)
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.ToSlash(p)
	for _, c := range [][2]string{{url, p}, {p, url}} {
		r := runBin(t, nil, nil, "-o", c[0], "--shard", "0/2", "--scorer", "env", c[1])
		if got, _ := os.ReadFile(p); r.code != 2 || !bytes.Equal(got, want) || !strings.Contains(r.stderr, "names an input") {
			t.Fatalf("-o %s, input %s: exit %d (want 2), input unchanged %v (%d groups left):\n%s", c[0], c[1], r.code, bytes.Equal(got, want), len(readBack(t, p)), r.stderr)
		}
	}
}

// TestInPlaceDiscardedSummarySaysNothingWritten: a judge failing every
// group under mark, in place, left the input as it was, but the summary
// just before said "6 rows written", which no file holds. It counts the
// rows written now: none.
func TestInPlaceDiscardedSummarySaysNothingWritten(t *testing.T) {
	p := scenario(t, t.TempDir(), "rollouts.parquet", 0, 3, 2)
	srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Content: "not json"} })
	r := runBin(t, nil, nil, "-o", p, "--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache",
		"--judge-retries", "0", "--on-judge-error", "mark", "--scorer", "ruler", p)
	if r.code != 1 || !strings.Contains(r.stderr, "left as it was") {
		t.Fatalf("exit %d, want 1 with the input left as it was:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "; 0 rows written") {
		t.Fatalf("the summary counts rows written that were discarded:\n%s", r.stderr)
	}
}

// TestInPlaceSkipRefused: --on-judge-error skip drops the groups the
// judge fails from the output, and in place (-o names the input) that
// output replaced the input: a judge failing one group of three ended
// exit 0 with that group gone from the file for good. skip in place is
// refused now, before any judge call (exit 2), naming mark and another
// -o; the file is left as it was.
func TestInPlaceSkipRefused(t *testing.T) {
	p := scenario(t, t.TempDir(), "rollouts.parquet", 0, 3, 2)
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	good := judgetest.KeywordJudge("WIN")
	var calls atomic.Int32
	srv := judgetest.NewServer(t, func(n int, r judgetest.Request) judgetest.Reply {
		calls.Add(1)
		if n == 1 {
			return judgetest.Reply{Content: "not json"}
		}
		return good(n, r)
	})
	r := runBin(t, nil, nil, "-o", p, "--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache",
		"--judge-retries", "0", "--concurrency", "1", "--on-judge-error", "skip", "--scorer", "ruler", p)
	got, _ := os.ReadFile(p)
	if r.code != 2 || !bytes.Equal(got, want) || !strings.Contains(r.stderr, "--on-judge-error mark") {
		t.Fatalf("exit %d (want 2), input unchanged %v (%d groups left):\n%s", r.code, bytes.Equal(got, want), len(readBack(t, p)), r.stderr)
	}
	if calls.Load() != 0 {
		t.Fatalf("%d judge calls before the refusal", calls.Load())
	}
	// Without a ruler scorer there is no judge to fail: skip changes
	// nothing and is not refused.
	if r := runBin(t, nil, nil, "-o", p, "--on-judge-error", "skip", "--scorer", "env", p); r.code != 0 {
		t.Fatalf("env in place under skip: exit %d:\n%s", r.code, r.stderr)
	}
}
