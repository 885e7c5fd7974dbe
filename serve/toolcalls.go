package serve

import (
	"bytes"
	"encoding/json"
	"strings"
)

// parsedCall is one function call found in model output.
type parsedCall struct {
	Name      string
	Arguments string // JSON text
}

// parseToolCalls splits model output into plain content and tool calls.
// Two formats are recognised:
//
//   - Hermes / Qwen: <tool_call>{"name": …, "arguments": {…}}</tool_call>,
//     any number of them; the text outside the tags is the content;
//   - Llama 3.1 JSON: the whole output (after an optional <|python_tag|>)
//     is {"name": …, "parameters": {…}} or several such objects separated
//     by ";".
//
// Output that matches neither comes back as content with no calls. A
// <tool_call> block that is not valid JSON, or names a function not in
// names (when names is not nil), is left in the content: a JSON answer
// that happens to have a "name" field is not a call. Output with the text
// <tool_call> but no Hermes call in it is read as Llama JSON: a Llama
// call's string argument may hold that text (code or docs about Qwen).
func parseToolCalls(text string, names map[string]bool) (content string, calls []parsedCall) {
	if strings.Contains(text, "<tool_call>") {
		if content, calls := parseHermes(text, names); len(calls) > 0 {
			return content, calls
		}
	}
	return parseLlamaJSON(text, names)
}

func parseHermes(text string, names map[string]bool) (string, []parsedCall) {
	var rest strings.Builder
	var calls []parsedCall
	s := text
	for {
		i := strings.Index(s, "<tool_call>")
		if i < 0 {
			rest.WriteString(s)
			break
		}
		body := s[i+len("<tool_call>"):]
		c, j, ok := hermesCall(body)
		if !ok || (names != nil && !names[c.Name]) {
			rest.WriteString(s[:i+len("<tool_call>")])
			s = body
			continue
		}
		rest.WriteString(s[:i])
		calls = append(calls, c)
		if j < 0 {
			break
		}
		s = body[j+len("</tool_call>"):]
	}
	return strings.TrimSpace(rest.String()), calls
}

// hermesCall reads the call that body (the text after a <tool_call>)
// begins with: one JSON object, then </tool_call> at j, or nothing but
// space (j = -1: an unterminated last call, max_tokens hit, is taken too).
// The object is read as JSON, not cut at the first </tool_call>, since a
// string argument may hold that text (code or docs about tool calls).
func hermesCall(body string) (c parsedCall, j int, ok bool) {
	t := strings.TrimLeft(body, " \t\r\n")
	dec := json.NewDecoder(strings.NewReader(t))
	var raw json.RawMessage
	if dec.Decode(&raw) != nil {
		return parsedCall{}, 0, false
	}
	after := t[dec.InputOffset():]
	tail := strings.TrimLeft(after, " \t\r\n")
	switch {
	case tail == "":
		j = -1
	case strings.HasPrefix(tail, "</tool_call>"):
		j = len(body) - len(tail)
	default:
		return parsedCall{}, 0, false
	}
	c, ok = callFromJSON(string(raw), "arguments", "parameters")
	return c, j, ok
}

func parseLlamaJSON(text string, names map[string]bool) (string, []parsedCall) {
	t := strings.TrimSpace(text)
	t = strings.TrimSpace(strings.TrimPrefix(t, "<|python_tag|>"))
	if !strings.HasPrefix(t, "{") {
		return text, nil
	}
	var calls []parsedCall
	for {
		dec := json.NewDecoder(strings.NewReader(t))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return text, nil
		}
		c, ok := callFromJSON(string(raw), "parameters", "arguments")
		if !ok || (names != nil && !names[c.Name]) {
			return text, nil
		}
		calls = append(calls, c)
		// Another call may follow after a ";".
		t = strings.TrimSpace(t[dec.InputOffset():])
		if t == "" {
			return "", calls
		}
		if t[0] != ';' {
			return text, nil
		}
		if t = strings.TrimSpace(t[1:]); t == "" {
			return "", calls // a ";" after the last call, as Llama 3 may end (vLLM's parser keeps the calls)
		}
	}
}

// callFromJSON reads {"name": string, <argKey>: object} with the arguments
// under the first of argKeys present.
func callFromJSON(s string, argKeys ...string) (parsedCall, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return parsedCall{}, false
	}
	var name string
	if err := json.Unmarshal(obj["name"], &name); err != nil || name == "" {
		return parsedCall{}, false
	}
	args := "{}"
	for _, k := range argKeys {
		if v, ok := obj[k]; ok {
			v = bytes.TrimSpace(v)
			args = string(v)
			if len(v) > 0 && v[0] == '"' {
				// Some models write the arguments as a JSON string: taken
				// for the JSON inside it when it holds some, else kept as
				// the string (arguments are JSON text to every client,
				// which json.loads them; vLLM json.dumps the value).
				var inner string
				if json.Unmarshal(v, &inner) == nil && json.Valid([]byte(inner)) {
					args = inner
				}
			}
			break
		}
	}
	return parsedCall{Name: name, Arguments: args}, true
}
