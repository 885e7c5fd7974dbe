package judge_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// The library reads no environment: a judge without a BaseURL calls
// api.openai.com even when $OPENAI_BASE_URL names another server
// (hone-score fills BaseURL from it). The openai-go client would otherwise
// take the variable itself.
func TestOpenAIReadsNoEnvironment(t *testing.T) {
	s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 500} })
	t.Setenv("OPENAI_BASE_URL", s.BaseURL())
	var hosts []string
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		hosts = append(hosts, r.URL.Host)
		return nil, errors.New("no network in tests")
	})}
	j := judge.NewOpenAI(judge.OpenAIOptions{HTTPClient: client, Timeout: time.Second})
	if _, err := j.Judge(context.Background(), req3); err == nil {
		t.Fatal("the call should fail: the transport refuses it")
	}
	if s.Hits() != 0 || len(hosts) != 1 || hosts[0] != "api.openai.com" {
		t.Fatalf("calls went to %v (and %d to $OPENAI_BASE_URL's server), want one to api.openai.com", hosts, s.Hits())
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A stop during the pause between attempts returns at once with the
// caller's error, not a judge failure, naming the failure being retried.
func TestRetryStopsDuringPause(t *testing.T) {
	s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 503} })
	ctx, cancel := context.WithCancel(context.Background())
	j := judge.Retry{Next: newOpenAI(s, "", time.Second), Attempts: 3, Backoff: func(int) time.Duration {
		cancel()
		return time.Hour
	}}
	_, err := j.Judge(ctx, req3)
	if !errors.Is(err, context.Canceled) || errors.Is(err, judge.ErrFailed) || s.Hits() != 1 {
		t.Fatalf("err %v after %d calls, want the cancellation after 1", err, s.Hits())
	}
}

// What the calls before a stop cost is still counted: a malformed answer
// that used tokens, then a stop in the pause before the retry, and a call
// the stop cut short, each show in the meter's usage.
func TestStopKeepsUsage(t *testing.T) {
	s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Content: "not json", PromptTokens: 100, CompletionTokens: 7}
	})
	ctx, cancel := context.WithCancel(context.Background())
	m := &judge.Meter{Next: judge.Retry{Next: newOpenAI(s, "", time.Second), Attempts: 3, Backoff: func(int) time.Duration {
		cancel()
		return time.Hour
	}}}
	if _, err := m.Judge(ctx, req3); !errors.Is(err, context.Canceled) || errors.Is(err, judge.ErrFailed) {
		t.Fatalf("err %v, want the cancellation", err)
	}
	if u := m.Usage()["judge-m"]; u.Calls != 1 || u.PromptTokens != 100 || u.CompletionTokens != 7 {
		t.Fatalf("usage after a stop in the pause: %+v, want the malformed call's", u)
	}

	cut := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Delay: time.Hour} })
	ctx, cancel = context.WithCancel(context.Background())
	m = &judge.Meter{Next: judge.Retry{Next: newOpenAI(cut, "", 0), Attempts: 3}}
	done := make(chan error, 1)
	go func() { _, err := m.Judge(ctx, req3); done <- err }()
	waitfor.Until(t, 10*time.Second, "the judge call to arrive", func() bool { return cut.Hits() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, judge.ErrFailed) {
		t.Fatalf("err %v, want the cancellation", err)
	}
	if u := m.Usage()["judge-m"]; u.Calls != 1 {
		t.Fatalf("usage after a call cut short: %+v, want 1 call", u)
	}
}
