package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestProxyRefusesPrefillAndEcho: hone-serve and vLLM answer a chat request
// with continue_final_message by continuing the request's last assistant
// message (a prefill), with chat echo by beginning the content with the
// last message's, and with add_generation_prompt false by continuing the
// prompt where the last message ends, without the assistant's header. The
// proxy recorded each answer as a new assistant turn after the generation
// prompt: the prefill and its continuation became two turns, and the
// echoed text was recorded as sampled when its tokens were not. The
// trajectory format has no place for a turn's unsampled part, so training
// would lay those tokens out under a prompt the model never saw. A recorded
// request with any of them is now refused with a 400 naming the field and
// nothing is recorded; an unrecorded one still goes upstream as it is.
func TestProxyRefusesPrefillAndEcho(t *testing.T) {
	base, _ := startServe(t)
	out := t.TempDir()
	p := proxyTo(t, strings.TrimSuffix(base, "/v1"), out)
	const prefill = `{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"The answer is"}]`
	for _, tc := range []struct{ extra, param string }{
		{`,"continue_final_message":true,"add_generation_prompt":false}`, "continue_final_message"},
		{`,"continue_final_message":true,"add_generation_prompt":false,"stream":true}`, "continue_final_message"},
		{`,"echo":true}`, "echo"},
		{`,"add_generation_prompt":false}`, "add_generation_prompt"},
	} {
		status, msg := chat(t, p, prefill+tc.extra, "t1", "g1")
		var e struct {
			Error struct {
				Message string `json:"message"`
				Param   string `json:"param"`
			} `json:"error"`
		}
		if status != http.StatusBadRequest || json.Unmarshal([]byte(msg), &e) != nil || e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.param) {
			t.Errorf("%s: %d %s; want a 400 naming %s", tc.extra, status, msg, tc.param)
		}
	}
	if status, msg := closeGroup(t, p, "g1"); status != http.StatusNotFound {
		t.Errorf("close g1 after refused requests: %d %s; want 404, nothing recorded", status, msg)
	}
	// The fields left at their defaults are recorded as any request.
	status, msg := chat(t, p, prefill+`,"continue_final_message":false,"echo":false,"add_generation_prompt":true}`, "t2", "g2")
	if status != http.StatusOK {
		t.Fatalf("defaults sent: %d %s", status, msg)
	}
	if tr := closeOne(t, p, out, "g2"); len(tr.Messages) != 3 || !tr.Messages[2].Trainable || len(tr.Messages[2].TokenIDs) == 0 {
		t.Errorf("defaults sent: recorded %+v; want the answer as a trainable third message with its tokens", tr.Messages)
	}
	// Not recorded, the prefill goes to hone-serve as the agent sent it.
	req := mustRequest(t, http.MethodPost, p+"/v1/chat/completions", prefill+`,"continue_final_message":true,"add_generation_prompt":false,"echo":true}`)
	if status, msg := do(t, req); status != http.StatusOK || !strings.Contains(msg, `"content":"The answer is`) {
		t.Errorf("unrecorded prefill with echo: %d %s; want hone-serve's answer, the prefill echoed", status, msg)
	}
}
