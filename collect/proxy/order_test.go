package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The attempts of one group run concurrently: a group's rows come in the
// order of their trajectories' first requests (as docs/proxy.md says),
// with each trajectory's start that of its first request, not in the
// order their first answers happened to come back.
func TestProxyGroupRowsInOrderOfFirstRequest(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") != "" {
			close(arrived)
			<-release // upstream takes its time with this one
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"agent","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop","token_ids":[5],"logprobs":{"content":[{"token":"hi","logprob":-0.5}]}}]}`)
	}))
	defer up.Close()
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	body := `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`

	first := make(chan int, 1)
	go func() {
		req := mustRequest(t, http.MethodPost, base+"/v1/chat/completions?slow=1", body)
		req.Header.Set("X-Hone-Trajectory", "first")
		req.Header.Set("X-Hone-Group", "g")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-arrived
	if status, msg := chat(t, base, body, "second", "g"); status != http.StatusOK {
		close(release)
		t.Fatalf("second: %d %s", status, msg)
	}
	close(release)
	if status := <-first; status != http.StatusOK {
		t.Fatalf("first: status %d", status)
	}
	if status, msg := closeGroup(t, base, "g"); status != http.StatusNoContent {
		t.Fatalf("close: %d %s", status, msg)
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("groups %+v; want g of two trajectories", gs)
	}
	a, b := gs[0].Trajectories[0], gs[0].Trajectories[1]
	if a.ID != "first" || b.ID != "second" {
		t.Errorf("rows %s, %s; want first, second (the order of their first requests)", a.ID, b.ID)
	}
	if byID := map[string]int64{a.ID: a.StartedAt.UnixNano(), b.ID: b.StartedAt.UnixNano()}; byID["first"] > byID["second"] {
		t.Errorf("first started at %d, after second's %d", byID["first"], byID["second"])
	}
}
