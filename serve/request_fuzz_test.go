package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReadJSON: any request body is read or refused with a 400 (413 past
// the cap) whose message names no Go type; a body that is not valid JSON,
// or not valid UTF-8, is refused; and the field a refusal names is in the
// body: for invalid UTF-8, a value (or an object's key) holding the bad
// byte; for a value of the wrong type, a value of the type it says it got.
func FuzzReadJSON(f *testing.F) {
	user := `{"role":"user","content":"hi"}`
	for _, s := range []string{
		`{"messages":[` + user + `,{"role":5,"content":"x"}]}`,
		`{"messages":[` + user + `],"stop":["a",5],"n":2}`,
		`{"messages":[` + user + `],"stop_token_ids":[1,1.5],"MAX_TOKENS":"ten"}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":\"` + "\xc3\x28" + `\"}"}}]}]}`,
		`{"messages":[` + user + `],"chat_template_kwargs":{"` + "\xfe" + `":1}}`,
		`{"prompt":"` + "\x80" + `","logprobs":true}`,
		`{"messages":[` + user + `]}xx`,
		`[1,2]`,
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, completion bool) {
		s := &Server{o: Options{MaxBodyBytes: 1 << 16}}
		r := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
		var v any = &chatRequest{}
		if completion {
			v = &completionRequest{}
		}
		_, err := s.readJSON(r, v)
		if err == nil {
			if !json.Valid(body) || !utf8.Valid(body) {
				t.Fatalf("%q: read, not refused", body)
			}
			return
		}
		var he *httpError
		if !errors.As(err, &he) || he.status != 400 && he.status != 413 {
			t.Fatalf("%q: %v (%T), want a 400", body, err, err)
		}
		if goTypeRE.MatchString(he.msg) && !strings.Contains(he.msg, "not valid JSON") {
			t.Fatalf("%q: %q names a Go type", body, he.msg)
		}
		if he.param == "" || !json.Valid(body) || !pathSpellable(body) {
			return
		}
		values, ok := valuesAt(body, he.param)
		if !ok {
			t.Fatalf("%q: %q names %q, which is not in the body", body, he.msg, he.param)
		}
		switch {
		case !utf8.Valid(body):
			if !anyOf(values, func(b []byte) bool { return !utf8.Valid(b) }) {
				t.Fatalf("%q: %q names %q, which holds no invalid UTF-8", body, he.msg, he.param)
			}
		case strings.Contains(he.msg, ": expected "):
			got := he.msg[strings.LastIndex(he.msg, ", got ")+len(", got "):]
			if !anyOf(values, func(b []byte) bool { return kindPhrase(jsonKindOf(b)) == got || string(bytes.TrimSpace(b)) == got }) {
				t.Fatalf("%q: %q names %q, which holds no %s", body, he.msg, he.param, got)
			}
		}
	})
}

func anyOf(vs [][]byte, f func([]byte) bool) bool {
	for _, v := range vs {
		if f(v) {
			return true
		}
	}
	return false
}

// jsonKindOf names a raw value's kind as json.UnmarshalTypeError does.
func jsonKindOf(b []byte) string {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return ""
	case b[0] == '"':
		return "string"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	}
	return "number"
}

// pathSpellable reports whether every key in the JSON document body can be
// told apart in a path: not empty, no ".", "[" or "]" in it, and short
// enough not to be clipped.
func pathSpellable(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if k, ok := tok.(string); ok && (k == "" || strings.ContainsAny(k, ".[]") || len(k) > 64) {
			return false
		}
	}
}

// valuesAt returns the raw values at path (messages[2].content) in the
// JSON document body: every one, where an object repeats a key. The
// object holding an invalid UTF-8 key counts as holding it too, since a
// path cannot name a key.
func valuesAt(body []byte, path string) ([][]byte, bool) {
	cur := [][]byte{body}
	for path != "" {
		var next [][]byte
		if path[0] == '[' {
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:end])
			if end < 0 || err != nil {
				return nil, false
			}
			path = path[end+1:]
			for _, c := range cur {
				var items []json.RawMessage
				if json.Unmarshal(c, &items) == nil && i < len(items) {
					next = append(next, items[i])
				}
			}
		} else {
			path = strings.TrimPrefix(path, ".")
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			key := path[:end]
			path = path[end:]
			for _, c := range cur {
				next = append(next, members(c, key)...)
			}
		}
		if len(next) == 0 {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// members returns the values of key in the JSON object obj, in order
// (keys matched as encoding/json matches them: without regard to case).
func members(obj []byte, key string) [][]byte {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out [][]byte
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return out
		}
		if k, _ := tok.(string); strings.EqualFold(k, key) {
			out = append(out, raw)
		}
	}
	return out
}
