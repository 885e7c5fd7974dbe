package judge_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hone-rl/hone/score/judge"
)

// TestMeterAnswered: the judge has answered once a call came back from
// the server itself, a verdict or a 200 it could not use (malformed, a
// refusal), so that a later 401/403/404 (a restarted vLLM without its
// adapter yet) is taken for the server's passing state; a cached verdict,
// an HTTP error or a transport failure is no such answer. A 200 that
// failed to parse did not count, and a later 404 stopped a skip/mark run
// as "as it will for every group".
func TestMeterAnswered(t *testing.T) {
	for _, c := range []struct {
		name string
		v    judge.Verdict
		err  error
		want bool
	}{
		{"verdict", judge.Verdict{Usage: judge.Usage{Calls: 1}}, nil, true},
		{"cached", judge.Verdict{Usage: judge.Usage{CacheHits: 1}}, nil, false},
		{"malformed 200", judge.Verdict{}, &judge.Error{Kind: "malformed", Retryable: true, Err: errors.New("no JSON")}, true},
		{"refusal 200", judge.Verdict{}, &judge.Error{Kind: "refusal", Err: errors.New("judge refused")}, true},
		{"http 500", judge.Verdict{}, &judge.Error{Kind: "http", Status: 500, Err: errors.New("boom")}, false},
		{"http 404", judge.Verdict{}, &judge.Error{Kind: "http", Status: 404, Err: errors.New("gone")}, false},
		{"transport", judge.Verdict{}, &judge.Error{Kind: "transport", Err: errors.New("refused")}, false},
	} {
		m := &judge.Meter{Next: judge.Func(func(context.Context, judge.Request) (judge.Verdict, error) { return c.v, c.err })}
		m.Judge(context.Background(), judge.Request{Model: "m"})
		if got := m.Answered(); got != c.want {
			t.Errorf("%s: Answered %v, want %v", c.name, got, c.want)
		}
	}
}
