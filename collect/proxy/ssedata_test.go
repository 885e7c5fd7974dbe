package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An event whose data spans several data: lines, one of them empty
// ("data:" alone adds an empty line to the event's data, by the SSE
// rules; only a blank line ends the event): the proxy records the turn
// the joined data holds, and the agent reads the stream unchanged.
func TestProxyStreamEmptyDataLine(t *testing.T) {
	const stream = `data: {"id":"c1","object":"chat.completion.chunk","model":"agent@7","choices":[{"index":0,` + "\n" +
		"data:\n" +
		`data: "delta":{"content":"Hi"},"finish_reason":"stop","token_ids":[5],"logprobs":{"content":[{"token":"Hi","logprob":-0.5}]}}]}` + "\n\n" +
		"data: [DONE]\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	defer up.Close()
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	// The agent, which did not ask for them, reads the event without the
	// token ids and logprobs, its data lines where they were.
	want := strings.Replace(stream, `,"token_ids":[5],"logprobs":{"content":[{"token":"Hi","logprob":-0.5}]}`, `,"logprobs":null`, 1)
	if _, got := chat(t, base, `{"model":"agent","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "a", "g"); got != want {
		t.Errorf("agent read %q, want %q", got, want)
	}
	tr := readGroups(t, base, out, "g")["a"]
	last := tr.Messages[len(tr.Messages)-1]
	// (Its error says only that no reward closed it.)
	if tr.Error != "not closed" || last.Content != "Hi" || len(last.TokenIDs) != 1 || last.TokenIDs[0] != 5 {
		t.Errorf("recorded error %q, turn %+v; want the turn \"Hi\" with token 5", tr.Error, last)
	}
}
