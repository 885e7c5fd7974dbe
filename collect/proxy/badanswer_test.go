package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An upstream answer the agent took (200) but the proxy cannot record (a
// tool call without a function name) was dropped with a log line only: a
// last turn so dropped left the trajectory ending a turn early, without
// an error, to be trained on with the whole episode's reward (and a first
// turn so dropped made the reward POST a 404). It is recorded as an error
// on the trajectory, as a streamed turn that cannot be is.
func TestProxyUnrecordableAnswerKeepsError(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), "again") {
			io.WriteString(w, `{"id":"c2","object":"chat.completion","model":"agent","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"x","type":"function","function":{"arguments":"{}"}}]},"finish_reason":"tool_calls","token_ids":[7],"logprobs":{"content":[{"token":"x","logprob":-0.1}]}}]}`)
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"agent","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop","token_ids":[5],"logprobs":{"content":[{"token":"hi","logprob":-0.5}]}}]}`)
	}))
	defer up.Close()
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	if status, msg := chat(t, base, `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`, "a", "g"); status != http.StatusOK {
		t.Fatalf("turn 1: %d %s", status, msg)
	}
	if status, msg := chat(t, base, `{"model":"agent","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hi"},{"role":"user","content":"again"}]}`, "a", "g"); status != http.StatusOK {
		t.Fatalf("turn 2: the agent gets upstream's answer: %d %s", status, msg)
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/a/reward", `{"reward":1}`)); status != http.StatusNoContent {
		t.Fatalf("reward: %d %s", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	if !strings.Contains(tr.Error, "turn 2") || !strings.Contains(tr.Error, "no function name") {
		t.Errorf("error %q; want turn 2's answer named as not recorded", tr.Error)
	}

	// A first turn so answered still makes a trajectory, which takes its reward.
	if status, msg := chat(t, base, `{"model":"agent","messages":[{"role":"user","content":"again"}]}`, "b", "g2"); status != http.StatusOK {
		t.Fatalf("b: %d %s", status, msg)
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/b/reward", `{"reward":0}`)); status != http.StatusNoContent {
		t.Fatalf("b's reward: %d %s", status, msg)
	}
}
