package collect_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
)

// vllmNotFound answers as vLLM does a chat call for a model it does not
// serve: a 404 whose error is at the top level and whose code is the
// status.
func vllmNotFound(w http.ResponseWriter, model string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, `{"object":"error","message":"The model `+"`"+model+"`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`)
}

// relay answers r with the server at upstream's answer, as passOn gets it.
func relay(w http.ResponseWriter, r *http.Request, upstream string) {
	resp := passOn(w, r, upstream)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// restartedFront stands in front of a real server as hone-serve's vLLM
// front does while vLLM restarts under it: the model it served a moment
// ago is answered once with vLLM's 404 "does not exist" (until the front's
// next sync loads the adapter again), and served again after that.
type restartedFront struct {
	upstream string
	goneAt   int // the call answered 404, counting from 1
	mu       sync.Mutex
	calls    int
}

func (f *restartedFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if r.URL.Path == "/v1/chat/completions" {
		f.calls++
	}
	gone := r.URL.Path == "/v1/chat/completions" && f.calls == f.goneAt
	f.mu.Unlock()
	if gone {
		vllmNotFound(w, "tiny")
		return
	}
	relay(w, r, f.upstream)
}

// Regression: the first 404 of a run stopped it and hone-collect kept
// nothing, also when the model had answered earlier calls of the run. A
// model the server served a moment ago is no wrong --model: its 404 is a
// server between two loads of the adapter (vLLM restarted under
// hone-serve's front, a step folder being loaded again), and stopping there
// threw away every group the run had finished. Such a 404 now fails its
// episode only, as any failed call does.
func TestModelGoneAfterAnswersFailsOnlyItsEpisode(t *testing.T) {
	front := &restartedFront{upstream: startTinyServe(t), goneAt: 2}
	srv := httptest.NewServer(front)
	defer srv.Close()
	var out bytes.Buffer
	temp := 1.0
	o := collect.Options{
		Env: "guess", Groups: 3, GroupSize: 1, Concurrency: 1, MaxTurns: 1, Seed: 3, Run: "r", Policy: "model", Out: &out,
		Model: collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "tiny", Temperature: &temp, MaxTokens: 4, Backoff: time.Millisecond},
	}
	st, err := runStats(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v, want the run to go on past one 404 for a model that answered before", err)
	}
	gs := readGroups(t, out.Bytes())
	if len(gs) != 3 || st.Failures != 1 {
		t.Fatalf("%d groups, %d failed episodes; want all 3 groups written, one of them failed", len(gs), st.Failures)
	}
	var failed []string
	for _, g := range gs {
		if e := g.Trajectories[0].Error; e != "" {
			failed = append(failed, e)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "404") {
		t.Errorf("episode errors %q, want one naming the 404", failed)
	}
}

// vllmUnknownModel stands in front of a real server as vLLM does for a
// model it does not serve: every chat call is vLLM's 404 (its error at the
// top level, its code the status), and GET models lists what it serves.
type vllmUnknownModel struct{ upstream string }

func (f vllmUnknownModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/chat/completions" {
		vllmNotFound(w, "nope")
		return
	}
	relay(w, r, f.upstream)
}

// Regression: vLLM answers a model it does not serve with a 404 whose
// code is the status, not model_not_found, and the run's error then said
// "no chat/completions there; an OpenAI base URL usually ends in /v1" for
// a base URL that was right, next to the models it listed from there. The
// advice on /v1 now comes only when the server lists no models.
func TestVLLMUnknownModelKeepsTheBaseURL(t *testing.T) {
	srv := httptest.NewServer(vllmUnknownModel{upstream: startTinyServe(t)})
	defer srv.Close()
	var out bytes.Buffer
	o := collect.Options{
		Env: "guess", Groups: 2, GroupSize: 1, Concurrency: 1, MaxTurns: 1, Seed: 3, Run: "r", Policy: "model", Out: &out,
		Model: collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "nope", MaxTokens: 4, Backoff: time.Millisecond},
	}
	_, err := runStats(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "serves: tiny") || strings.Contains(err.Error(), "usually ends in /v1") {
		t.Errorf("run: %v; want model not found, naming tiny as served and no advice on /v1", err)
	}
}
