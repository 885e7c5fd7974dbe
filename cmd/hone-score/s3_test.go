package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// Scoring S3 to S3 with the judge cache in S3 (a real S3 protocol server):
// the second run, as another shard or a retried job would, answers every
// group from the shared cache and writes the same output, reading the
// cache's entries over shared connections (each entry opened a bucket, a
// new connection, of its own: 12 groups, about 14 connections a run).
func TestObjectStoreInputsOutputAndCache(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 12, 4)
	b, err := fileset.ReadFile(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(context.Background(), s3.URL("hone", "collected/a.parquet"), b); err != nil {
		t.Fatal(err)
	}
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + srv.BaseURL()}
	score := func(out string, extra ...string) {
		t.Helper()
		args := append([]string{"-o", out, "--judge-model", "judge-m", "--judge-cache", s3.URL("hone", "judge-cache"),
			"--scorer", "ruler", s3.URL("hone", "collected/")}, extra...)
		r := runBin(t, env, nil, args...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	}
	score(s3.URL("hone", "scored/1.parquet"))
	if srv.Hits() != 12 {
		t.Fatalf("judge hits %d, want 12", srv.Hits())
	}
	// One entry at a time, so that the count is not that of the
	// requests in flight together (a shared client opens a connection
	// for each).
	before := s3.Connections()
	score(s3.URL("hone", "scored/2.parquet"), "--concurrency", "1")
	if srv.Hits() != 12 {
		t.Errorf("judge hits %d after a second run, want still 12: the S3 cache answered none", srv.Hits())
	}
	// The input set, the output and the cache: a bucket each, about a
	// connection each.
	if n := s3.Connections() - before; n > 5 {
		t.Errorf("the cached run took %d connections for 12 cache entries, an input and an output: the entries do not share a bucket", n)
	}
	first, _ := fileset.ReadFile(context.Background(), s3.URL("hone", "scored/1.parquet"))
	second, _ := fileset.ReadFile(context.Background(), s3.URL("hone", "scored/2.parquet"))
	if len(first) == 0 || string(first) != string(second) {
		t.Errorf("the cached run wrote other bytes (%d vs %d)", len(first), len(second))
	}
	keys, err := fileset.ListDirs(context.Background(), s3.URL("hone", "judge-cache"))
	if err != nil || len(keys) == 0 {
		t.Errorf("no cache entries in S3: %v %v", keys, err)
	}
}

// -o naming an object in a bucket the store does not have (a typo) is a
// usage error before any scoring, naming the bucket. Before, the output
// went to a local temporary file and its upload failed only at the end:
// the whole input was scored, every judge call paid for, and the result
// lost, with an error that said only "file does not exist".
func TestOutputToMissingBucketFailsBeforeScoring(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 3, 4)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + srv.BaseURL()}
	r := runBin(t, env, nil, "-o", s3.URL("hnoe", "scored/1.parquet"), "--judge-model", "judge-m", "--scorer", "ruler", a)
	if r.code != 2 || !strings.Contains(r.stderr, "bucket s3://hnoe/ does not exist") {
		t.Fatalf("-o in a missing bucket: exit %d, %q; want a usage error naming the bucket", r.code, r.stderr)
	}
	if srv.Hits() != 0 {
		t.Errorf("the judge was called %d times before the missing bucket was noticed", srv.Hits())
	}
}

// --judge-cache in a bucket the store does not have (a typo) is a usage
// error before any judge call, naming the bucket. Before, every verdict's
// read and store failed with a warning of its own, and the run went on
// paying for each call with nothing cached.
func TestJudgeCacheInMissingBucketFailsBeforeScoring(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 3, 4)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + srv.BaseURL()}
	r := runBin(t, env, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-model", "judge-m",
		"--judge-cache", s3.URL("hnoe", "judge-cache"), "--scorer", "ruler", a)
	if r.code != 2 || !strings.Contains(r.stderr, "--judge-cache") || !strings.Contains(r.stderr, "bucket s3://hnoe/ does not exist") {
		t.Fatalf("--judge-cache in a missing bucket: exit %d, %q; want a usage error naming the bucket", r.code, r.stderr)
	}
	if srv.Hits() != 0 {
		t.Errorf("the judge was called %d times before the missing bucket was noticed", srv.Hits())
	}
}
