package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPromptTokenIDErrors: a completions prompt of token ids with one bad
// element is a 400 naming that element, not "one prompt per request, got
// 3" (the ids did not decode as int32, and the array was then taken for a
// batch of three prompts); a batch of several prompts keeps its own 400.
func TestPromptTokenIDErrors(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	for _, c := range []struct{ prompt, param, want string }{
		{`[1, 2, 4294967296]`, "prompt[2]", "prompt[2]: expected a token id (an integer from 0 to 258), got 4294967296"},
		{`[1, 2, 1.5]`, "prompt[2]", "prompt[2]: expected a token id (an integer from 0 to 258), got 1.5"},
		{`[1, "x", 3]`, "prompt[1]", "prompt[1]: expected a token id (an integer from 0 to 258), got a string"},
		{`[1, 2, 259]`, "prompt", "token id 259 outside the vocabulary [0, 259)"},
		// null is no token id: encoding/json decoded it into an int32 as
		// 0, and the prompt was [1, 0, 3].
		{`[1, null, 3]`, "prompt[1]", "prompt[1]: expected a token id (an integer from 0 to 258), got null"},
		{`[[null, 2]]`, "prompt[0][0]", "prompt[0][0]: expected a token id (an integer from 0 to 258), got null"},
		{`[[1, 2, 4294967296]]`, "prompt[0][2]", "prompt[0][2]: expected a token id (an integer from 0 to 258), got 4294967296"},
		{`["a", "b"]`, "prompt", "this server takes one prompt per request, got 2"},
		{`[[1], [2], [3]]`, "prompt", "this server takes one prompt per request, got 3"},
	} {
		status, body := ts.post(t, "/v1/completions", `{"model":"tiny","max_tokens":1,"prompt":`+c.prompt+`}`)
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%s: %v: %s", c.prompt, err, body)
		}
		if status != http.StatusBadRequest || !strings.Contains(e.Error.Message, c.want) || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("prompt %s: %d %s; want 400 on %s saying %q", c.prompt, status, body, c.param, c.want)
		}
	}
}
