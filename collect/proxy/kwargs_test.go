package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestProxyRecordsChatTemplateKwargs: the proxy forwarded a request's
// chat_template_kwargs (Qwen3's {"enable_thinking": false}, ART's
// extra_body) but did not record them, so training laid the turns out
// under another prompt than the one the model was served. The kwargs are
// now recorded on the trajectory (metadata hone.chat_template_kwargs, as
// canonical JSON), streamed or not; every turn of a trajectory must send
// the same ones, and a turn that sends others, none after some, or a value
// that is not a JSON object is refused with a 400 naming the field,
// recording nothing.
func TestProxyRecordsChatTemplateKwargs(t *testing.T) {
	base, _ := startServe(t)
	out := t.TempDir()
	p := proxyTo(t, strings.TrimSuffix(base, "/v1"), out)
	const conv = `{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"hi"}]`
	for i, extra := range []string{
		`,"chat_template_kwargs":{"enable_thinking":false,"x":1}}`,
		`,"stream":true,"chat_template_kwargs":{ "x" : 1.0, "enable_thinking" : false }}`,
	} {
		if status, msg := chat(t, p, conv+extra, "t1", "g1"); status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i+1, status, msg)
		}
	}
	for _, tc := range []struct{ extra, why string }{
		{`,"chat_template_kwargs":{"enable_thinking":true,"x":1}}`, "other kwargs"},
		{`}`, "no kwargs after some"},
		{`,"stream":true,"chat_template_kwargs":null}`, "null after some"},
		{`,"chat_template_kwargs":[1]}`, "not an object"},
	} {
		status, msg := chat(t, p, conv+tc.extra, "t1", "g1")
		var e struct {
			Error struct {
				Message string `json:"message"`
				Param   string `json:"param"`
			} `json:"error"`
		}
		if status != http.StatusBadRequest || json.Unmarshal([]byte(msg), &e) != nil || e.Error.Param != "chat_template_kwargs" || !strings.Contains(e.Error.Message, "chat_template_kwargs") {
			t.Errorf("%s: %d %s; want a 400 naming chat_template_kwargs", tc.why, status, msg)
		}
	}
	tr := closeOne(t, p, out, "g1")
	if got := tr.Metadata[trajectory.MetadataKeyChatTemplateKwargs]; got != `{"enable_thinking":false,"x":1}` {
		t.Errorf("recorded kwargs %q; want the turns' canonical JSON", got)
	}
	if n := len(tr.Messages); n != 2 || tr.Error != "not closed" {
		t.Errorf("recorded %d messages, error %q; want the refused turns left out", n, tr.Error)
	}

	// Without kwargs nothing is recorded, and a later turn may not add some.
	out2 := t.TempDir()
	p2 := proxyTo(t, strings.TrimSuffix(base, "/v1"), out2)
	if status, msg := chat(t, p2, conv+`}`, "t2", "g2"); status != http.StatusOK {
		t.Fatalf("no kwargs: %d %s", status, msg)
	}
	if status, msg := chat(t, p2, conv+`,"chat_template_kwargs":{"enable_thinking":false}}`, "t2", "g2"); status != http.StatusBadRequest || !strings.Contains(msg, "chat_template_kwargs") {
		t.Errorf("kwargs after none: %d %s; want a 400 naming chat_template_kwargs", status, msg)
	}
	if v, ok := closeOne(t, p2, out2, "g2").Metadata[trajectory.MetadataKeyChatTemplateKwargs]; ok {
		t.Errorf("no kwargs sent, recorded %q", v)
	}
}
