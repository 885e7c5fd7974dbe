package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
)

// TestIgnoredFieldWarningHeaderValid: an ignored field whose name holds a
// control character (a key from a client's bug, "\u0001") is named in the
// X-Hone-Warning header with that byte replaced, so that the header stays
// a valid HTTP field value: written raw, it made openai-go's HTTP client
// refuse the whole response ("malformed MIME header"), as it does
// Python's h11 (httpx, under the openai package), and the answer was lost
// to a field the server ignores.
func TestIgnoredFieldWarningHeaderValid(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	for _, key := range []string{"bad\x01key", "bad\x7fkey", "bad\x00key"} {
		resp, err := ts.client.Chat.Completions.New(context.Background(), chatParams("tiny", 1, 2), option.WithJSONSet(key, 1))
		if err != nil {
			t.Fatalf("ignored field %q: %v", key, err)
		}
		if len(resp.Choices) != 1 {
			t.Fatalf("ignored field %q: %d choices", key, len(resp.Choices))
		}
	}
	status, h, _ := ts.postHeader(t, "/v1/chat/completions", `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"odd\u0001name":1}`)
	if w := h.Get(WarningHeader); status != 200 || !strings.Contains(w, "odd") || !strings.Contains(w, "name") || strings.ContainsFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		t.Fatalf("%d, %s %q: want the field named without control characters", status, WarningHeader, w)
	}
}
