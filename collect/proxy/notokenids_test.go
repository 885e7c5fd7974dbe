package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
)

// TestProxyNoTokenIDs: with NoTokenIDs (--no-token-ids) the request sent
// upstream has no return_token_ids, so an upstream that refuses parameters
// it does not know, as OpenAI's API does, answers it; the turn is recorded
// with its text and logprobs and no token ids (format/layout takes such
// logprobs as unknown). Without it every recorded request to such an
// upstream failed. The agent's tools go as it wrote them, "strict" (which
// OpenAI's API acts on) kept: with no token ids to match, there is no
// prompt to keep as training lays it out.
func TestProxyNoTokenIDs(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]json.RawMessage
		json.NewDecoder(r.Body).Decode(&req)
		if !strings.Contains(string(req["tools"]), `"strict":true`) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"tools without strict: `+strings.ReplaceAll(string(req["tools"]), `"`, `'`)+`","type":"invalid_request_error"}}`)
			return
		}
		if _, ok := req["return_token_ids"]; ok {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"Unrecognized request argument supplied: return_token_ids","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"gpt","choices":[{"index":0,"finish_reason":"stop",`+
			`"message":{"role":"assistant","content":"Sunny."},"logprobs":{"content":[{"token":"Sun","logprob":-0.1},{"token":"ny.","logprob":-0.2}]}}]}`)
	}))
	defer up.Close()
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px", NoTokenIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	tools := `[{"type":"function","function":{"name":"weather","strict":true,"parameters":{"type":"object","properties":{}}}}]`
	if status, body := chat(t, srv.URL, `{"model":"gpt","messages":[{"role":"user","content":"Weather?"}],"tools":`+tools+`}`, "a", "g"); status != http.StatusOK || !strings.Contains(body, "Sunny.") {
		t.Fatalf("chat: %d %s", status, body)
	}
	tr := closeOne(t, srv.URL, out, "g")
	last := tr.Messages[len(tr.Messages)-1]
	if last.Content != "Sunny." || len(last.TokenIDs) != 0 || len(last.Logprobs) != 2 || strings.Contains(tr.Error, "token") {
		t.Errorf("recorded turn %+v (error %q); want the text and logprobs without token ids", last, tr.Error)
	}
}

// TestProxyForwardsOpenAIHeaders: the agent's OpenAI-Organization and
// OpenAI-Project headers reach the upstream, which scopes and bills a
// request by them (they were dropped: the request ran under the key's
// default organization and project).
func TestProxyForwardsOpenAIHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"gpt","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer up.Close()
	base := proxyTo(t, up.URL, t.TempDir())
	req := mustRequest(t, http.MethodPost, base+"/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`)
	req.Header.Set("X-Hone-Trajectory", "a")
	req.Header.Set("X-Hone-Group", "g")
	req.Header.Set("OpenAI-Organization", "org-1")
	req.Header.Set("OpenAI-Project", "proj-2")
	if status, body := do(t, req); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, body)
	}
	h := <-got
	if h.Get("OpenAI-Organization") != "org-1" || h.Get("OpenAI-Project") != "proj-2" {
		t.Errorf("upstream got organization %q, project %q; want org-1, proj-2", h.Get("OpenAI-Organization"), h.Get("OpenAI-Project"))
	}
}
