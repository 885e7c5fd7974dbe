package serve

import (
	"regexp"
	"strings"
	"testing"
)

// goTypeRE matches Go type syntax that must never reach a client.
var goTypeRE = regexp.MustCompile(`\[\]|interface \{|map\[|struct \{|chattemplate\.|serve\.|json\.|\*?\b[a-z]+\.[A-Z]\w*|\bint(8|16|32|64)?\b|float(32|64)`)

// TestBadRequestsNameTheField: malformed bodies, unknown roles and invalid
// UTF-8 are 400s in OpenAI's shape whose message and param name the JSON
// field (with array indices) and the JSON types, never a Go type.
func TestBadRequestsNameTheField(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	const chat, cmpl = "/v1/chat/completions", "/v1/completions"
	user := `{"role":"user","content":"hi"}`
	for _, c := range []struct {
		path, body, param, msg string
	}{
		{chat, `{"messages":{"role":"user"}}`, "messages", "messages: expected an array, got an object"},
		{chat, `{"messages":[` + user + `,{"role":5,"content":"x"}]}`, "messages[1].role", "messages[1].role: expected a string, got a number"},
		{chat, `{"messages":[` + user + `,{"role":"user","content":5}]}`, "messages[1].content", "messages[1].content: expected a string or an array of content parts, got a number"},
		{chat, `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":[]}]}]}`, "messages[0].content[1].text", "messages[0].content[1].text: expected a string, got an array"},
		{chat, `{"messages":[{"role":"user","content":["a"]}]}`, "messages[0].content[0]", "messages[0].content[0]: expected a content part (an object with a type), got a string"},
		{chat, `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"function":{"name":"f"}},{"function":{"name":3}}]}]}`, "messages[1].tool_calls[1].function.name", "messages[1].tool_calls[1].function.name: expected a string, got a number"},
		{chat, `{"messages":[{"role":"assistant","tool_calls":{}}]}`, "messages[0].tool_calls", "messages[0].tool_calls: expected an array, got an object"},
		{chat, `{"messages":[` + user + `],"response_format":{"type":"json_schema","json_schema":5}}`, "response_format.json_schema", "response_format.json_schema: expected an object, got a number"},
		{chat, `{"messages":[` + user + `],"chat_template_kwargs":[]}`, "chat_template_kwargs", "chat_template_kwargs: expected an object, got an array"},
		{chat, `{"messages":[` + user + `],"tools":{}}`, "tools", "tools: expected an array, got an object"},
		{chat, `{"messages":[` + user + `],"stop":5}`, "stop", "stop: expected a string or an array of strings, got a number"},
		{chat, `{"messages":[` + user + `],"stop":["a",5]}`, "stop[1]", "stop[1]: expected a string, got a number"},
		{chat, `{"messages":[` + user + `],"stop_token_ids":[1,1.5]}`, "stop_token_ids[1]", "stop_token_ids[1]: expected a 32-bit integer, got 1.5"},
		// encoding/json decoded the null into an int32 as 0: token 0 stopped the sequence.
		{chat, `{"messages":[` + user + `],"stop_token_ids":[1,null]}`, "stop_token_ids[1]", "stop_token_ids[1]: expected a 32-bit integer, got null"},
		{chat, `{"messages":[` + user + `],"MAX_TOKENS":"ten"}`, "MAX_TOKENS", "MAX_TOKENS: expected an integer, got a string"},
		{chat, `{"messages":[` + user + `],"stream_options":true}`, "stream_options", "stream_options: expected an object, got a boolean"},
		{chat, `[1,2]`, "", "the request body: expected an object, got an array"},
		{cmpl, `{"prompt":"x","logprobs":true}`, "logprobs", "logprobs: expected an integer, got a boolean"},
		{cmpl, `{"prompt":"x","echo":"yes"}`, "echo", "echo: expected true or false, got a string"},
		// Roles.
		{chat, `{"messages":[` + user + `,{"role":"hacker","content":"x"}]}`, "messages[1].role", `messages[1].role: unknown role "hacker"; want system, developer, user, assistant, tool or function`},
		{chat, `{"messages":[{"content":"x"}]}`, "messages[0].role", "messages[0].role is missing; want system, developer, user, assistant, tool or function"},
		// Invalid UTF-8 anywhere: encoding/json would pass it on as U+FFFD.
		{chat, `{"messages":[` + user + `,{"role":"user","content":"caf` + "\xe9" + `"}]}`, "messages[1].content", "messages[1].content: not valid UTF-8"},
		{chat, `{"messages":[{"role":"user","name":"` + "\xff" + `","content":"x"}]}`, "messages[0].name", "messages[0].name: not valid UTF-8"},
		{chat, `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":\"` + "\xc3\x28" + `\"}"}}]}]}`, "messages[0].tool_calls[0].function.arguments", "messages[0].tool_calls[0].function.arguments: not valid UTF-8"},
		{chat, `{"messages":[{"role":"user","content":[{"type":"text","text":"` + "\xed\xa0\x80" + `"}]}]}`, "messages[0].content[0].text", "messages[0].content[0].text: not valid UTF-8"},
		{chat, `{"messages":[` + user + `],"chat_template_kwargs":{"` + "\xfe" + `":1}}`, "chat_template_kwargs", "chat_template_kwargs: an object key is not valid UTF-8"},
		{cmpl, `{"prompt":"` + "\x80" + `"}`, "prompt", "prompt: not valid UTF-8"},
		// Malformed JSON says where.
		{chat, `{"messages":[` + user + `]}xx`, "", "request body is not valid JSON: invalid character 'x' after top-level value (at byte 46)"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			status, body := ts.post(t, c.path, c.body)
			if status != 400 {
				t.Fatalf("status %d, want 400: %s", status, body)
			}
			msg, typ, param, _ := apiErrorOf(t, body)
			if !strings.HasPrefix(msg, c.msg) || typ != "invalid_request_error" || param != c.param {
				t.Fatalf("error %q (type %q, param %q), want %q (param %q)", msg, typ, param, c.msg, c.param)
			}
			if g := goTypeRE.FindString(msg); g != "" {
				t.Fatalf("error %q shows Go type syntax %q", msg, g)
			}
		})
	}
	// Accepted: every OpenAI role, a lone surrogate escape (decoded to
	// U+FFFD by encoding/json, as Python would keep it), null content.
	for _, body := range []string{
		`{"messages":[{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"user","content":[{"type":"text","text":"u"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"function","name":"f","content":"r"}],"max_tokens":2}`,
		`{"messages":[{"role":"user","content":"x\ud800"}],"max_tokens":2}`,
	} {
		if status, out := ts.post(t, chat, body); status != 200 {
			t.Fatalf("%s: %d %s", body, status, out)
		}
	}
}

// TestGoTypeRE: the pattern catches what encoding/json's messages held.
func TestGoTypeRE(t *testing.T) {
	for _, s := range []string{"want []chattemplate.Message", "want map[string]interface {}", "want serve.chatRequest", "of type int32", "want struct { Name string }", "json.RawMessage"} {
		if !goTypeRE.MatchString(s) {
			t.Errorf("goTypeRE misses %q", s)
		}
	}
	for _, s := range []string{"messages[1].content: expected a string, got a number", "stop_token_ids[1]: expected a 32-bit integer, got 1.5"} {
		if g := goTypeRE.FindString(s); g != "" {
			t.Errorf("goTypeRE matches %q in %q", g, s)
		}
	}
}
