package serve

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// chatPromptIDs posts a chat body (which asks for return_token_ids) and
// returns the prompt's token ids and the X-Hone-Warning header; a status
// other than 200 fails the test.
func chatPromptIDs(t *testing.T, ts *testServer, body string) ([]int32, string) {
	t.Helper()
	status, h, out := ts.postHeader(t, "/v1/chat/completions", body)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", body, status, out)
	}
	var resp struct {
		PromptTokenIDs []int32 `json:"prompt_token_ids"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	return resp.PromptTokenIDs, h.Get(WarningHeader)
}

// TestContinueFinalMessage: vLLM's continue_final_message renders the
// conversation without a generation prompt and cuts the text right after
// the last message's content, so that the model continues that message
// (an assistant prefill). It was ignored (only a warning header): the
// prompt closed the message with <|im_end|> and the model began another.
// A final message given as content parts is continued after its last text
// part; with add_generation_prompt true or left out (vLLM's default is
// true) it is a 400, as in vLLM.
func TestContinueFinalMessage(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	want := toInt32(ts.s.tok.Encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nThe answer is", false))
	for _, last := range []string{`"The answer is"`, `[{"type":"text","text":"The answer is"}]`} {
		body := `{"model":"tiny","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":` + last +
			`}],"max_tokens":2,"return_token_ids":true,"continue_final_message":true,"add_generation_prompt":false}`
		got, warning := chatPromptIDs(t, ts, body)
		if !slices.Equal(got, want) || warning != "" {
			t.Errorf("content %s: prompt %v, %s %q; want %v and no warning", last, got, WarningHeader, warning, want)
		}
	}
	// A trailing space the template keeps stays in the prompt, as
	// transformers cuts it.
	got, _ := chatPromptIDs(t, ts, `{"model":"tiny","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"The answer is "}],"max_tokens":2,"return_token_ids":true,"continue_final_message":true,"add_generation_prompt":false}`)
	if w := toInt32(ts.s.tok.Encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nThe answer is ", false)); !slices.Equal(got, w) {
		t.Errorf("trailing space: prompt %v, want %v", got, w)
	}
	// false is the rendering as before.
	plain, _ := chatPromptIDs(t, ts, `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"return_token_ids":true,"continue_final_message":false}`)
	if w := toInt32(ts.s.tok.Encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", false)); !slices.Equal(plain, w) {
		t.Errorf("continue_final_message false: prompt %v, want %v", plain, w)
	}
	for _, c := range []struct{ body, param string }{
		{`{"model":"tiny","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"The"}],"max_tokens":2,"continue_final_message":true}`, "add_generation_prompt"},
		{`{"model":"tiny","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"The"}],"max_tokens":2,"continue_final_message":true,"add_generation_prompt":true}`, "add_generation_prompt"},
		{`{"model":"tiny","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null}],"max_tokens":2,"continue_final_message":true,"add_generation_prompt":false}`, "messages"},
	} {
		status, out := ts.post(t, "/v1/chat/completions", c.body)
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"`+c.param+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, status, out, c.param)
		}
	}
}
