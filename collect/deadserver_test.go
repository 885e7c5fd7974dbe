package collect_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
)

// refusingURL is the base URL of a port nothing listens on any more:
// every connection is refused.
func refusingURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// TestDeadServerStopsAfterFirstGroup: with no --max-failures, a server
// that refuses every connection stops the run once the first group
// finished with every episode failing to connect, naming the server; each
// episode spent its retries (7.5 s by default) and the run played every
// one before it failed. An explicit --max-failures keeps its own
// meaning: the run plays on until that limit.
func TestDeadServerStopsAfterFirstGroup(t *testing.T) {
	url := refusingURL(t)
	opts := func(maxFail string) collect.Options {
		return collect.Options{
			Env: "guess", Groups: 40, GroupSize: 2, Concurrency: 1, MaxTurns: 4, Seed: 1, Run: "r", Policy: "model",
			Out: &bytes.Buffer{}, MaxFailures: maxFail,
			Model: collect.ModelOptions{BaseURL: url, Model: "m", Retries: 1, Backoff: time.Millisecond, RequestTimeout: 2 * time.Second},
		}
	}
	st, err := runStats(context.Background(), opts(""))
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), url) {
		t.Fatalf("got %v; want a stop naming the refused connections to %s", err, url)
	}
	if st.Episodes >= 80 {
		t.Errorf("played all %d episodes against a dead server: %v", st.Episodes, err)
	}
	st, err = runStats(context.Background(), opts("1000"))
	if err == nil || st.Episodes != 80 {
		t.Errorf("--max-failures 1000: %d episodes, %v; want all 80 played, every one failed", st.Episodes, err)
	}
}

// TestDeadServerOneEpisodeWording: a first group of one episode is said as
// one ("the one episode ended so far"), not "the 1 episodes".
func TestDeadServerOneEpisodeWording(t *testing.T) {
	url := refusingURL(t)
	_, err := runStats(context.Background(), collect.Options{
		Env: "guess", Groups: 3, GroupSize: 1, Concurrency: 1, MaxTurns: 4, Seed: 1, Run: "r", Policy: "model",
		Out:   &bytes.Buffer{},
		Model: collect.ModelOptions{BaseURL: url, Model: "m", Retries: 1, Backoff: time.Millisecond, RequestTimeout: 2 * time.Second},
	})
	if err == nil || !strings.Contains(err.Error(), "the one episode ended so far, a whole group, failed to connect") {
		t.Fatalf("got %v; want the one-episode wording", err)
	}
	if strings.Contains(err.Error(), "1 episodes") {
		t.Errorf("plural for one episode: %v", err)
	}
}

// TestUnknownHostStopsAfterFirstGroup: a --base-url whose host does not
// resolve (a typo: http://locahost:8000/v1) stops the run once the first
// group finished, as a refused connection does, naming the failed host
// lookup; it played every episode, each spending its retries. The host
// is under .invalid (RFC 2606), which never resolves; offline the lookup
// fails too (the resolver is unreachable), as fast, and stops the same.
func TestUnknownHostStopsAfterFirstGroup(t *testing.T) {
	const url = "http://hone-test.invalid:8000/v1"
	st, err := runStats(context.Background(), collect.Options{
		Env: "guess", Groups: 40, GroupSize: 2, Concurrency: 1, MaxTurns: 4, Seed: 1, Run: "r", Policy: "model",
		Out:   &bytes.Buffer{},
		Model: collect.ModelOptions{BaseURL: url, Model: "m", Retries: 1, Backoff: time.Millisecond, RequestTimeout: 2 * time.Second},
	})
	if !errors.Is(err, collect.ErrUnreachable) || !strings.Contains(err.Error(), "look up the host hone-test.invalid") {
		t.Fatalf("got %v; want a stop as unreachable naming the failed lookup of hone-test.invalid", err)
	}
	if strings.Contains(err.Error(), "connection refused") {
		t.Errorf("says connection refused for a host that does not resolve: %v", err)
	}
	if st.Episodes >= 80 {
		t.Errorf("played all %d episodes against a host that does not resolve: %v", st.Episodes, err)
	}
}
