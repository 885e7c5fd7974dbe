package serve

import (
	"strings"
	"testing"
)

// TestGuidedDecodingRefused: vLLM's guided-decoding fields (guided_json,
// guided_choice, guided_regex, guided_grammar, structured_outputs) are a
// 400 naming the field, on chat and completions, rather than a 200 whose
// output nothing constrained: they were ignored with only a warning
// header, and a judge asking for "yes" or "no" got free text back. A
// null is leaving the field out.
func TestGuidedDecodingRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	bodies := map[string]string{
		"/v1/chat/completions": `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":2,`,
		"/v1/completions":      `{"model":"tiny","prompt":"x","max_tokens":2,`,
	}
	fields := map[string]string{
		"guided_json":        `{"type":"object"}`,
		"guided_choice":      `["yes","no"]`,
		"guided_regex":       `"a+"`,
		"guided_grammar":     `"root ::= \"a\""`,
		"structured_outputs": `{"choice":["yes","no"]}`,
	}
	for path, head := range bodies {
		for f, v := range fields {
			status, out := ts.post(t, path, head+`"`+f+`":`+v+`}`)
			if status != 400 || !strings.Contains(out, `"param":"`+f+`"`) {
				t.Errorf("%s with %s: %d %s; want a 400 on %s", path, f, status, out, f)
			}
			if status, out := ts.post(t, path, head+`"`+f+`":null}`); status != 200 {
				t.Errorf("%s with %s null: %d %s; want 200", path, f, status, out)
			}
		}
	}
}

// TestGuidedDecodingRefusedSaysResponseFormat: the 400 for guided_json
// on /v1/completions sent the client to /v1/chat/completions for
// response_format, which /v1/completions takes too: it names the field
// to send on the same route.
func TestGuidedDecodingRefusedSaysResponseFormat(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":2,"guided_json":{"type":"object"}}`)
	if status != 400 || strings.Contains(out, "chat/completions") || !strings.Contains(out, "response_format") {
		t.Fatalf("guided_json on /v1/completions: %d %s; want a 400 naming response_format, on this route", status, out)
	}
}
