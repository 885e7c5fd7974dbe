package collect_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// The library reads no environment: a Model without a BaseURL calls
// api.openai.com even when $OPENAI_BASE_URL names another server (hone-collect
// fills BaseURL from it). The openai-go client would otherwise take the
// variable itself.
func TestModelReadsNoEnvironment(t *testing.T) {
	srv := openaitest.New(bisectReply)
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	var hosts []string
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		hosts = append(hosts, r.URL.Host)
		return nil, errors.New("no network in tests")
	})}
	m := collect.NewModel(collect.ModelOptions{Model: "m", HTTPClient: client})
	if _, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "hi"}}, nil, 1); err == nil {
		t.Fatal("the call should fail: the transport refuses it")
	}
	if srv.Count() != 0 || len(hosts) != 1 || hosts[0] != "api.openai.com" {
		t.Fatalf("calls went to %v (and %d to $OPENAI_BASE_URL's server), want one to api.openai.com", hosts, srv.Count())
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Retries go through internal/retry with the model's count: a call that
// keeps failing with a 500 or a dropped connection is made Retries+1
// times, one answered 404 once.
func TestModelRetryCounts(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault openaitest.Fault
		want  int64
	}{{"500", openaitest.Status500, 3}, {"drop", openaitest.Drop, 3}} {
		t.Run(c.name, func(t *testing.T) {
			srv := openaitest.New(bisectReply)
			defer srv.Close()
			srv.SetFault(func(int64) openaitest.Fault { return c.fault })
			m := collect.NewModel(collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "m", Retries: 2, Backoff: 1})
			_, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "range 1-8"}}, nil, 1)
			if err == nil || srv.Count() != c.want {
				t.Fatalf("err %v after %d calls, want a failure after %d", err, srv.Count(), c.want)
			}
		})
	}
	// A 404 (the server does not serve this path) is not worth repeating.
	srv := openaitest.New(bisectReply)
	defer srv.Close()
	m := collect.NewModel(collect.ModelOptions{BaseURL: srv.URL + "/nope", Model: "m", Retries: 4, Backoff: 1})
	if _, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "range 1-8"}}, nil, 1); err == nil || srv.Count() != 1 {
		t.Fatalf("err %v after %d calls, want a failure after 1", err, srv.Count())
	}
}

// A scenario file that cannot be read is bad input (exit code 2 without
// pointing to --help), not bad usage; bad flags are bad usage. Summary
// is called once either way, with nothing counted.
func TestErrorKinds(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(bad, []byte(`{"id":"a","split":"dev"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    collect.Options
		kind error
	}{
		{"bad scenario file", collect.Options{Env: "guess", Scenarios: bad, GroupSize: 1, Concurrency: 1, Policy: "scripted"}, stageerr.ErrBadInput},
		{"missing scenario file", collect.Options{Env: "guess", Scenarios: bad + ".missing", GroupSize: 1, Concurrency: 1, Policy: "scripted"}, stageerr.ErrBadInput},
		{"bad policy", collect.Options{Env: "guess", Groups: 1, GroupSize: 1, Concurrency: 1, Policy: "nobody"}, stageerr.ErrUsage},
		{"no model", collect.Options{Env: "guess", Groups: 1, GroupSize: 1, Concurrency: 1}, stageerr.ErrUsage},
		{"bad max-failures", collect.Options{Env: "guess", Groups: 1, GroupSize: 1, Concurrency: 1, Policy: "scripted", MaxFailures: "1.5"}, stageerr.ErrUsage},
	} {
		var out bytes.Buffer
		c.o.Out = &out
		st, err := runStats(context.Background(), c.o)
		other := stageerr.ErrUsage
		if c.kind == stageerr.ErrUsage {
			other = stageerr.ErrBadInput
		}
		if !errors.Is(err, c.kind) || errors.Is(err, other) || st != (collect.Stats{}) {
			t.Errorf("%s: err %v, stats %+v; want only %v and nothing counted", c.name, err, st, c.kind)
		}
	}
}
