package env_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/trajectory"
)

var tools = []trajectory.Tool{{Type: "function", Name: "f",
	Parameters: `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"integer"},"x":{"type":["number","null"]},"l":{"type":"array"}},"required":["s"],"additionalProperties":false}`}}

func TestCheckCall(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"f", `{"s":"a"}`, ""},
		{"f", `{"s":"a","n":3,"x":null,"l":[1]}`, ""},
		{"f", ` {"s":"a","x":1.5} `, ""},
		{"g", `{}`, `unknown tool "g"`},
		{"f", `{"s":`, "not a JSON object"},
		{"f", `[1]`, "not a JSON object"},
		{"f", `{}`, `missing required argument "s"`},
		{"f", `{"s":1}`, `"s" should be string`},
		{"f", `{"s":"a","n":1.5}`, `"n" should be integer`},
		// Integers past int64 are integers too (JSON Schema: a number
		// without a fraction); they were refused, int64(f) overflowing.
		{"f", `{"s":"a","n":12345678901234567890}`, ""},
		{"f", `{"s":"a","n":1e21}`, ""},
		{"f", `{"s":"a","n":-1e300}`, ""},
		{"f", `{"s":"a","n":9.5e18}`, ""},
		{"f", `{"s":"a","z":1}`, `unexpected argument "z"`},
	} {
		_, err := env.CheckCall(trajectory.ToolCall{Name: tc.name, Arguments: tc.args}, tools)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s(%s): %v, want %q", tc.name, tc.args, err, tc.want)
		}
	}
}

// Malformed model output never panics the checker or the converter.
func FuzzCheckCall(f *testing.F) {
	for _, s := range []string{`{"s":"a"}`, `{`, `null`, `{"s":{"x":[1,{}]}}`, `"str"`, `{"n":1e400}`} {
		f.Add("f", s)
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		env.CheckCall(trajectory.ToolCall{Name: name, Arguments: args}, tools)
		trajectory.FromChat(chatmsg.Message{Role: "assistant", ContentJSON: json.RawMessage(args)})
	})
}
