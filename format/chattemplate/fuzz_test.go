package chattemplate

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ardanlabs/jinja"
)

// FuzzJSONRoundTrip: any valid JSON decodes, and tojson (plain and
// indented) writes valid JSON with the same value.
func FuzzJSONRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"b": 1, "a": [true, null, 2.5, "x\u2028y"]}`, `[]`, `{}`, `"\u0000\ud83d\ude00"`,
		`-0.0`, `1e400`, `123456789012345678901234567890`, `{"k": {"k": {"k": [1e-7, 0.1]}}}`,
		`"\xff"`, `[1, [2, [3, {"": ""}]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		v, err := DecodeJSON(data)
		if err != nil {
			// encoding/json accepts numbers that overflow float64 only as
			// json.Number; DecodeJSON rejects them, which is fine.
			return
		}
		var want any
		if err := json.Unmarshal(data, &want); err != nil {
			return
		}
		for _, kwargs := range []map[string]jinja.Value{nil, {"indent": jinja.NewInt(2)}} {
			out, err := tojsonFilter([]jinja.Value{v}, kwargs)
			if err != nil {
				t.Fatalf("tojson(%s): %v", data, err)
			}
			var got any
			if err := json.Unmarshal([]byte(out.AsString()), &got); err != nil {
				t.Fatalf("tojson(%s) = %s: not JSON: %v", data, out.AsString(), err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("tojson(%s) = %s: value changed", data, out.AsString())
			}
		}
	})
}

// FuzzInstrument: a template the engine compiles is either refused by a
// static limit or rendered with the hooks exactly as without them; a
// rendering stopped by a limit is the end (hostile templates must stop,
// not crash or hang). Seeds in testdata/fuzz/FuzzInstrument hold the
// hostile templates of limits_test.go and whitespace-control cases.
func FuzzInstrument(f *testing.F) {
	for _, s := range []string{
		"{%- for m in messages -%}\n  {{- m.content -}}\n{% endfor %}\n",
		"{% for m in messages %}\n  {{ m.role }}\n{%- else %} none {% endfor %}",
		"  {% macro x(a) -%}\n\t{{ a }}  {%- endmacro %}\n{{ x(1) }} {{- x(2) }}",
		"{% set s %}\n {{ eos_token }} {% endset -%}\n{{ s }}|{% raw %} {{- x }} {% endraw %}",
		"{{ '-}}' }}{#- c -#}\n{%- if flag %}y{% endif -%}  \n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		same, err := sameWithAndWithoutHooks(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		if !same {
			t.Fatal("renders differently with the hooks")
		}
	})
}

// FuzzStrFormat: str.format with any format string neither panics (a
// field name read as a negative position indexed the arguments with it)
// nor writes more than one value may hold.
func FuzzStrFormat(f *testing.F) {
	for _, s := range []string{
		"{}: {}", "{0[1]}{1.a}{k!r:>8}", "{-1}", "{+0}{0[-1]}", "{0[0]}{}", "{:{}.{}f}", "{:{:{}}}",
		"{:*^10,.2f}", "{:#010_x}", "{:{{}}}", "{!", "{0[", "{:.99999999999999999999}", "{:<020}",
	} {
		f.Add(s)
	}
	args := []jinja.Value{jinja.NewInt(-7), jinja.NewFloat(2.5), jinja.NewString("ab"),
		jinja.NewList([]jinja.Value{jinja.NewInt(1), jinja.None()})}
	kwargs := map[string]jinja.Value{"k": jinja.NewString("v"), "": jinja.NewBool(true)}
	f.Fuzz(func(t *testing.T, format string) {
		out, err := pyStrFormat(format, args, kwargs)
		if err == nil && len(out.AsString()) > DefaultValueBytes {
			t.Fatalf("%q: %d bytes, past the value bytes limit", format, len(out.AsString()))
		}
	})
}
