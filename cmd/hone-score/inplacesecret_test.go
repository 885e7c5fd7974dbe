package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestInPlaceMessagesMaskEndpointPassword: the messages about -o naming
// an input (--shard refused, --on-judge-error skip refused, the input
// left as it was after a judge failed every group) quoted -o as given,
// so an s3:// output whose endpoint carries a password
// (endpoint=http://user:PASSWORD@host, docs/cluster.md) showed it on
// stderr, which pod logs keep, where every other message masks it.
func TestInPlaceMessagesMaskEndpointPassword(t *testing.T) {
	const secret = "PassW0rdXYZ"
	s3 := fakes3d.StartTest(t, "hone")
	url := strings.Replace(s3.URL("hone", "in.parquet"), "endpoint=http://", "endpoint=http://bob:"+secret+"@", 1)
	b, err := fileset.ReadFile(context.Background(), scenario(t, t.TempDir(), "in.parquet", 0, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(context.Background(), url, b); err != nil {
		t.Fatal(err)
	}
	failing := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Content: "not json"} })
	judge := []string{"--judge-base-url", failing.BaseURL(), "--judge-model", "m", "--no-judge-cache", "--judge-retries", "0", "--scorer", "ruler"}
	for _, c := range []struct {
		name, says string
		code       int
		args       []string
	}{
		{"shard", "names an input", 2, []string{"--shard", "0/2", "--scorer", "env"}},
		{"skip", "names an input", 2, append([]string{"--on-judge-error", "skip"}, judge...)},
		{"judge failed all", "left as it was", 1, append([]string{"--on-judge-error", "mark"}, judge...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runBin(t, nil, nil, append(append([]string{"-o", url}, c.args...), url)...)
			if r.code != c.code || !strings.Contains(r.stderr, c.says) {
				t.Fatalf("exit %d, want %d saying %q:\n%s", r.code, c.code, c.says, r.stderr)
			}
			if strings.Contains(r.stderr, secret) {
				t.Errorf("stderr shows the endpoint's password:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, "bob:REDACTED@") {
				t.Errorf("stderr does not name -o, masked:\n%s", r.stderr)
			}
		})
	}
}
