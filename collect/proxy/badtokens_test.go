package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// An upstream whose answer carries token ids and logprobs that do not pair
// up (3 ids, 2 logprobs) still reaches the agent as it came; the recorded
// turn keeps its text without the tokens, with an error saying why, so that
// the group is written when it closes rather than refused at every close.
func TestProxyUnpairedTokens(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"agent@2","choices":[{"index":0,"finish_reason":"stop",`+
			`"message":{"role":"assistant","content":"Sunny."},"token_ids":[5,6,7],`+
			`"logprobs":{"content":[{"token":"Sun","logprob":-0.1},{"token":"ny.","logprob":-0.2}]}}]}`)
	}))
	defer up.Close()
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"agent","messages":[{"role":"user","content":"Weather?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hone-Trajectory", "a")
	req.Header.Set("X-Hone-Group", "g")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Sunny.") {
		t.Fatalf("chat: %s %s", resp.Status, body)
	}
	resp, err = http.Post(srv.URL+"/hone/groups/g/close", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("close: %s %s", resp.Status, msg)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil || len(gs) != 1 || len(gs[0].Trajectories) != 1 {
		t.Fatalf("groups %+v, %v", gs, err)
	}
	tr := gs[0].Trajectories[0]
	if !strings.Contains(tr.Error, "tokens were not recorded") || !strings.Contains(tr.Error, "2 logprobs for 3 token ids") {
		t.Errorf("error %q, want the turn's", tr.Error)
	}
	last := tr.Messages[len(tr.Messages)-1]
	if last.Role != "assistant" || last.Content != "Sunny." || len(last.TokenIDs) != 0 || len(last.Logprobs) != 0 {
		t.Errorf("recorded turn %+v, want its text without tokens", last)
	}
}
