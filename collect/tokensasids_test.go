package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/gobuild"
)

// startTinyServe runs the real hone-serve on the tiny test model with
// Qwen2.5's chat template, and returns its base URL.
func startTinyServe(t *testing.T) string {
	t.Helper()
	return serveModel(t, openaitest.TinyQwenModel(t, ".."))
}

// serveModel builds and runs the real hone-serve as a process (collect
// may not import serve, policy_test.go) on the model folder dir, and
// returns its base URL.
func serveModel(t *testing.T, dir string) string {
	t.Helper()
	bin := t.TempDir()
	if err := gobuild.Commands(context.Background(), bin, "../cmd/hone-serve"); err != nil {
		t.Fatal(err)
	}
	addr := openaitest.StartProcess(t, filepath.Join(bin, "hone-serve"), "--model", dir, "--port", "0", "--threads", "1")
	return "http://" + addr
}

// oldServer stands in front of a real server as a server that does not
// know return_token_ids: it takes token_ids out of every answer, keeping
// what the server sampled to compare with what collect recorded. With
// textTokens it also drops return_tokens_as_token_ids from the request, as
// a server that knows neither extension: its logprobs tokens are text.
type oldServer struct {
	upstream   string
	textTokens bool
	mu         sync.Mutex
	sampled    [][]int32 // each answer's token_ids, in the order answered
}

func (s *oldServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := s.forward(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// forward sends r's request upstream and returns the answer without its
// choices' token_ids.
func (s *oldServer) forward(r *http.Request) ([]byte, error) {
	var req map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	if s.textTokens {
		delete(req, "return_tokens_as_token_ids")
	}
	b, _ := json.Marshal(req)
	resp, err := http.Post(s.upstream+r.URL.Path, "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream %d %s: %v", resp.StatusCode, raw, err)
	}
	var ans map[string]json.RawMessage
	var choices []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("answer: %w", err)
	}
	if err := json.Unmarshal(ans["choices"], &choices); err != nil {
		return nil, fmt.Errorf("answer's choices: %w", err)
	}
	for _, c := range choices {
		var ids []int32
		if err := json.Unmarshal(c["token_ids"], &ids); err != nil || len(ids) == 0 {
			return nil, fmt.Errorf("upstream answered without token_ids: %s", raw)
		}
		s.mu.Lock()
		s.sampled = append(s.sampled, ids)
		s.mu.Unlock()
		delete(c, "token_ids")
	}
	ans["choices"], _ = json.Marshal(choices)
	return json.Marshal(ans)
}

// TestRunTokenIDsFromLogprobTokens: a server that does not know
// return_token_ids (vLLM before it had it, other OpenAI-compatible
// servers) sends no token_ids, and collect recorded its turns without
// ids, leaving training to tokenize the text again with the sampling
// logprobs unplaced. collect now also asks for vLLM's older
// return_tokens_as_token_ids and reads the ids from the logprobs tokens
// ("token_id:<id>"): the turns carry the ids the real hone-serve sampled.
// A server that writes its logprobs tokens as text names no ids, and the
// turns are recorded without them, as before, with no error.
func TestRunTokenIDsFromLogprobTokens(t *testing.T) {
	upstream := startTinyServe(t)
	for _, textTokens := range []bool{false, true} {
		t.Run(fmt.Sprintf("textTokens=%v", textTokens), func(t *testing.T) {
			old := &oldServer{upstream: upstream, textTokens: textTokens}
			srv := httptest.NewServer(old)
			defer srv.Close()
			tr := guessEpisode(t, srv.URL, 2, 6)
			var got [][]int32
			for _, m := range tr.Messages {
				if m.Role != "assistant" {
					continue
				}
				if !m.Trainable || len(m.Logprobs) == 0 {
					t.Fatalf("assistant turn %q: trainable %v, %d logprobs", m.Content, m.Trainable, len(m.Logprobs))
				}
				if textTokens && len(m.TokenIDs) != 0 {
					t.Errorf("text logprobs tokens: turn %q recorded ids %v, want none", m.Content, m.TokenIDs)
				}
				if !textTokens && len(m.TokenIDs) != len(m.Logprobs) {
					t.Errorf("turn %q: %d ids, %d logprobs", m.Content, len(m.TokenIDs), len(m.Logprobs))
				}
				got = append(got, m.TokenIDs)
			}
			old.mu.Lock()
			sampled := old.sampled
			old.mu.Unlock()
			if len(got) != len(sampled) || len(got) == 0 {
				t.Fatalf("%d assistant turns recorded, %d answers served", len(got), len(sampled))
			}
			if textTokens {
				return
			}
			for i := range got {
				if !slices.Equal(got[i], sampled[i]) {
					t.Errorf("turn %d: recorded ids %v, the server sampled %v", i, got[i], sampled[i])
				}
			}
		})
	}
}

// The request carries both extensions, and token_ids come first where
// the server sends them: the logprobs tokens' ids are only the fallback.
func TestModelAsksForTokensAsTokenIDs(t *testing.T) {
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ab"},"finish_reason":"stop",`+
			`"token_ids":[1,2],"logprobs":{"content":[{"token":"token_id:7","logprob":-0.5},{"token":"token_id:8","logprob":-1}]}}]}`)
	}))
	defer srv.Close()
	m := collect.NewModel(collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "m"})
	got, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "hi"}}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		ReturnTokenIDs         bool `json:"return_token_ids"`
		ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids"`
		Logprobs               bool `json:"logprobs"`
	}
	body := <-bodies
	if err := json.Unmarshal(body, &req); err != nil || !req.ReturnTokenIDs || !req.ReturnTokensAsTokenIDs || !req.Logprobs {
		t.Errorf("request %s (%v): want return_token_ids, return_tokens_as_token_ids and logprobs", body, err)
	}
	if !slices.Equal(got.TokenIDs, []int32{1, 2}) {
		t.Errorf("recorded ids %v, want token_ids [1 2] over the logprobs tokens' [7 8]", got.TokenIDs)
	}
}
