package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUnknownAdapterStepSaysWhy: a model name of a served run with a step
// that is not loaded, or not written as a plain number, is a 404 that says
// so and names what is served; it said only `the model "r@000001" does not
// exist`, though the registry knew why, and a user copying the step from
// the folder's name (step-000001) had no hint that r@1 is its name. A name
// of a run not served, or without a step, gets the plain 404 as before.
func TestUnknownAdapterStepSaysWhy(t *testing.T) {
	dir, adir := tinyDir(t), t.TempDir()
	writeStep(t, dir, adir, "r", 1)
	ts := startServer(t, Options{Model: dir, Adapters: adir, PollInterval: time.Hour}, nil)
	for _, c := range []struct{ model, want string }{
		{"r@000001", `the model "r@000001" does not exist: steps are named by plain numbers, such as r@42 (loaded: r, r@1)`},
		{"r@2", `the model "r@2" does not exist: step 2 of run "r" is not loaded (loaded: r, r@1)`},
		{"r@x", `the model "r@x" does not exist: steps are named by plain numbers, such as r@42 (loaded: r, r@1)`},
		{"q@1", `the model "q@1" does not exist`},
		{"q", `the model "q" does not exist`},
	} {
		status, body := ts.post(t, "/v1/completions", `{"model":"`+c.model+`","prompt":"hi","max_tokens":1}`)
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatal(err)
		}
		if status != http.StatusNotFound || !strings.HasPrefix(e.Error.Message, c.want) || e.Error.Code != "model_not_found" {
			t.Errorf("model %q: %d %s; want 404 model_not_found saying %q", c.model, status, body, c.want)
		}
	}
	// The names it suggests are served.
	if status, body := ts.post(t, "/v1/completions", `{"model":"r@1","prompt":"hi","max_tokens":1}`); status != http.StatusOK {
		t.Fatalf("r@1: %d %s", status, body)
	}
}
