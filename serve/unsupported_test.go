package serve

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestUnsupportedFieldsRefused: OpenAI request fields that change the
// output and that this server does not implement are a 400 naming the
// field, not silently ignored: the completions' suffix and best_of above n
// (vLLM refuses both too). Their neutral values pass. And stream_options
// without stream, which OpenAI and vLLM refuse. And content parts that are
// not text, which vLLM refuses for a text-only model.
func TestUnsupportedFieldsRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	cmpl := func(extra string) string { return `{"model":"tiny","prompt":"hi","max_tokens":2` + extra + `}` }
	chat := func(content string) string {
		return `{"model":"tiny","messages":[{"role":"user","content":` + content + `}],"max_tokens":2}`
	}
	for _, c := range []struct {
		path, body, param string
	}{
		{"/v1/completions", cmpl(`,"suffix":"end"`), "suffix"},
		{"/v1/completions", cmpl(`,"best_of":3`), "best_of"},
		{"/v1/completions", cmpl(`,"n":2,"best_of":3`), "best_of"},
		{"/v1/completions", cmpl(`,"suffix":""`), ""},
		{"/v1/completions", cmpl(`,"suffix":null`), ""},
		{"/v1/completions", cmpl(`,"n":2,"best_of":2`), ""},
		{"/v1/completions", cmpl(`,"best_of":1`), ""},
		// stream_options without a stream is a 400 in OpenAI's API and vLLM.
		{"/v1/completions", cmpl(`,"stream_options":{"include_usage":true}`), "stream_options"},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream_options":{"include_usage":true}}`, "stream_options"},
		{"/v1/completions", cmpl(`,"stream_options":null`), ""},
		// A part that is not text (an image, audio) cannot reach a
		// text-only model's prompt; leaving it out would answer another
		// conversation than the one sent.
		{"/v1/chat/completions", chat(`[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]`), "messages[0].content[1].type"},
		{"/v1/chat/completions", chat(`[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]`), "messages[0].content[0].type"},
		{"/v1/chat/completions", chat(`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`), ""},
	} {
		status, body := ts.post(t, c.path, c.body)
		if c.param == "" {
			if status != http.StatusOK {
				t.Errorf("%s %s: %d %s, want 200", c.path, c.body, status, body)
			}
			continue
		}
		var eb struct {
			Error struct {
				Param *string `json:"param"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(body), &eb)
		if status != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != c.param {
			t.Errorf("%s %s: %d %s, want 400 naming %s", c.path, c.body, status, body, c.param)
		}
	}
}

// TestIgnoredFieldsWarned: a request with fields this server does not read
// (vLLM's spaces_between_special_tokens, OpenAI's store) is answered, with
// the X-Hone-Warning header naming them, as vLLM logs the fields it
// ignores; field names match as encoding/json matches them (without regard
// to case), so a known field in other case is no warning, and a request of
// known fields only has none.
func TestIgnoredFieldsWarned(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	for _, c := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"spaces_between_special_tokens":false,"store":true}`,
			"fields ignored: spaces_between_special_tokens, store"},
		{"/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":2,"service_tier":"auto"}`, "fields ignored: service_tier"},
		{"/v1/completions", `{"Model":"tiny","prompt":"hi","MAX_TOKENS":2,"stream_options":null}`, ""},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"logprobs":true,"top_logprobs":2,"return_token_ids":true}`, ""},
	} {
		status, h, body := ts.postHeader(t, c.path, c.body)
		if status != http.StatusOK || h.Get(WarningHeader) != c.want {
			t.Errorf("%s: %d, %s %q, want 200 and %q: %s", c.body, status, WarningHeader, h.Get(WarningHeader), c.want, body)
		}
	}
}
