package chattemplate

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/hone-rl/hone/format/chatmsg"
)

// The expected strings below are Python's own output, from
//
//	python3 -c 'import json; print(json.dumps(X, ...))'
//
// with the X and options named in each row.
func TestToJSONMatchesPython(t *testing.T) {
	floats := []struct {
		in   float64
		want string
	}{
		{1.0, "1.0"}, {0.5, "0.5"}, {26.1, "26.1"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{123456789.0, "123456789.0"}, {0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e300, "1.5e+300"},
		{2.5e-7, "2.5e-07"}, {1.0 / 3, "0.3333333333333333"}, {100.0, "100.0"},
		{9007199254740993.0, "9007199254740992.0"},
	}
	for _, f := range floats {
		got, err := ToJSON(jinja.NewFloat(f.in))
		if err != nil || got != f.want {
			t.Errorf("float %v: got %q (%v), want %q", f.in, got, err, f.want)
		}
	}
	if got, _ := ToJSON(jinja.NewFloat(math.Copysign(0, -1))); got != "-0.0" {
		t.Errorf("-0.0: got %q", got)
	}

	obj := mustDecode(t, `{"b": [1, {"x": []}], "a": {}, "é": "\u2028<&>\u0001😀"}`)
	rows := []struct {
		name   string
		v      jinja.Value
		kwargs map[string]jinja.Value
		want   string
	}{
		{"indent=2", obj, map[string]jinja.Value{"indent": jinja.NewInt(2)},
			"{\n  \"b\": [\n    1,\n    {\n      \"x\": []\n    }\n  ],\n  \"a\": {},\n  \"é\": \"\u2028<&>\\u0001😀\"\n}"},
		{"sort_keys,ensure_ascii", mustDecode(t, `{"b": 1, "a": "é😀"}`),
			map[string]jinja.Value{"sort_keys": jinja.NewBool(true), "ensure_ascii": jinja.NewBool(true)},
			`{"a": "\u00e9\ud83d\ude00", "b": 1}`},
		{"indent=0", mustDecode(t, `[1, 2]`), map[string]jinja.Value{"indent": jinja.NewInt(0)}, "[\n1,\n2\n]"},
		{"separators", mustDecode(t, `{"a": [1, 2]}`),
			map[string]jinja.Value{"separators": jinja.NewList([]jinja.Value{jinja.NewString(","), jinja.NewString(":")})},
			`{"a":[1,2]}`},
		{"default", mustDecode(t, `{"z": 1, "y": [true, null, 2.50]}`), nil, `{"z": 1, "y": [true, null, 2.5]}`},
	}
	for _, r := range rows {
		got, err := tojsonFilter([]jinja.Value{r.v}, r.kwargs)
		if err != nil || got.AsString() != r.want {
			t.Errorf("%s: got %q (%v), want %q", r.name, got.String(), err, r.want)
		}
	}
}

func mustDecode(t *testing.T, s string) jinja.Value {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestDecodeJSONKeepsOrderAndTypes(t *testing.T) {
	v := mustDecode(t, `{"zeta": 1, "alpha": 2.0, "mid": {"q": 1e2, "p": 9223372036854775807}}`)
	if got := strings.Join(v.AsDict().OrderedKeys(), ","); got != "zeta,alpha,mid" {
		t.Errorf("keys %s", got)
	}
	got, _ := ToJSON(v)
	if want := `{"zeta": 1, "alpha": 2.0, "mid": {"q": 100.0, "p": 9223372036854775807}}`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	for _, bad := range []string{`{"a":1} x`, `{"a":}`, ``, `[1,`} {
		if _, err := DecodeJSON([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestStrftimeNowUsesClock(t *testing.T) {
	tmpl, err := New(`{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%A %-d %B %y %H:%M:%S %p %j %%") }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Clock = func() time.Time { return time.Date(2024, 7, 5, 15, 4, 9, 0, time.UTC) }
	got, err := tmpl.Render(t.Context(), Input{})
	if err != nil {
		t.Fatal(err)
	}
	// python3 -c 'import datetime as d; t=d.datetime(2024,7,5,15,4,9); print(t.strftime("%d %b %Y|%A %-d %B %y %H:%M:%S %p %j %%"))'
	if want := "05 Jul 2024|Friday 5 July 24 15:04:09 PM 187 %"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	bad, _ := New(`{{ strftime_now("%Q") }}`, nil)
	if _, err := bad.Render(t.Context(), Input{}); err == nil {
		t.Error("unknown directive: want an error")
	}
}

// TestRaiseException: the message is transformers' raise_exception(message)
// argument, given by position, by name or through a splat (jinja2 raises
// TemplateError("roles must alternate") for each); by name it was lost,
// the error saying only "raise_exception called".
func TestRaiseException(t *testing.T) {
	for _, src := range []string{
		`{{ raise_exception("roles must alternate") }}`,
		`{{ raise_exception(message="roles must alternate") }}`,
		`{{ raise_exception(**{"message": "roles must alternate"}) }}`,
		`{{ raise_exception(*["roles must alternate"]) }}`,
	} {
		tmpl, err := New(src, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		_, err = tmpl.Render(t.Context(), Input{})
		var raised *RaisedError
		if !errors.As(err, &raised) || raised.Message != "roles must alternate" {
			t.Errorf("%s: got %v", src, err)
		}
	}
}

func TestNamedTemplatesAndSpecialTokens(t *testing.T) {
	tmpl, err := Load(filepath.Join(templatesDir, "chatml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tmpl.Names(), ","); got != "default,tool_use" {
		t.Errorf("names %s", got)
	}
	sp := tmpl.SpecialTokens()
	if sp["eos_token"] != "<|im_end|>" || sp["pad_token"] != "<|im_end|>" {
		t.Errorf("special tokens %v (eos_token is an AddedToken object in the config)", sp)
	}
	if _, ok := sp["bos_token"]; ok {
		t.Error("bos_token null must be left out")
	}
	msgs := []chatmsg.Message{{Role: "user", Content: "hi"}}
	plain, err := tmpl.Render(t.Context(), Input{Messages: msgs})
	if err != nil || plain != "<|im_start|>user\nhi<|im_end|>\n" {
		t.Errorf("default: %q %v", plain, err)
	}
	tool, _ := chatmsg.Tool{Name: "f", Parameters: `{"type":"object"}`}.MarshalJSON()
	withTools, err := tmpl.Render(t.Context(), Input{Messages: msgs, Tools: []json.RawMessage{tool}})
	if err != nil || !strings.HasPrefix(withTools, "<|im_start|>system\nTools:\n{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}") {
		t.Errorf("tool_use: %q %v", withTools, err)
	}
	forced, err := tmpl.Render(t.Context(), Input{Messages: msgs, Tools: []json.RawMessage{tool}, TemplateName: "default"})
	if err != nil || forced != plain {
		t.Errorf("TemplateName default: %q %v", forced, err)
	}
	if _, err := tmpl.Render(t.Context(), Input{TemplateName: "nope"}); err == nil {
		t.Error("unknown template name: want an error")
	}
}

func TestLoadPrefersChatTemplateJinja(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tokenizer_config.json", `{"bos_token": "<s>", "chat_template": "config {{ bos_token }}"}`)
	tmpl, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tmpl.Render(t.Context(), Input{}); got != "config <s>" {
		t.Errorf("got %q", got)
	}
	write("chat_template.jinja", "file {{ bos_token }}{{ x }}")
	tmpl, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{"x": 1, "bos_token": "<B>"}})
	if err != nil || got != "file <B>1" {
		t.Errorf("got %q %v (kwargs override special tokens)", got, err)
	}
	if _, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{"messages": 1}}); err == nil {
		t.Error("kwarg messages: want an error")
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("empty folder: want an error")
	}
	// Without either, the processor's chat_template.json (multimodal Gemma 3).
	os.Remove(filepath.Join(dir, "chat_template.jinja"))
	write("tokenizer_config.json", `{"bos_token": "<s>"}`)
	write("chat_template.json", `{"chat_template": "processor {{ bos_token }}"}`)
	if tmpl, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := tmpl.Render(t.Context(), Input{}); got != "processor <s>" {
		t.Errorf("chat_template.json: got %q", got)
	}
	write("tokenizer_config.json", `{"bos_token": "<s>", "chat_template": "config"}`)
	if tmpl, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := tmpl.Render(t.Context(), Input{}); got != "config" {
		t.Errorf("tokenizer_config.json's template beside chat_template.json: got %q", got)
	}
	write("tokenizer_config.json", `{}`)
	write("chat_template.json", `[`)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "chat_template.json") {
		t.Errorf("bad chat_template.json: %v", err)
	}
	os.Remove(filepath.Join(dir, "chat_template.json"))
	write("tokenizer_config.json", `{"chat_template": 5}`)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Errorf("bad chat_template: %v", err)
	}
}

func TestMessageJSON(t *testing.T) {
	var m chatmsg.Message
	err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[
		{"id":"1","type":"function","function":{"name":"f","arguments":"{\"b\": 1, \"a\": [2]}"}},
		{"function":{"name":"g","arguments":{"y":true,"x":null}}},
		{"function":{"name":"h","arguments":"not json"}}]}`), &m)
	if err != nil {
		t.Fatal(err)
	}
	// Null content reaches a template that takes a string as "", as vLLM
	// gives it (serve's TestNullContentRendersAsEmpty).
	tmpl, _ := New(`{{ messages[0].content is string and messages[0].content == "" }}{% for c in messages[0].tool_calls %}|{{ c.function.arguments | tojson }}{% endfor %}`, nil)
	got, err := tmpl.Render(t.Context(), Input{Messages: []chatmsg.Message{m}})
	if want := `True|{"b": 1, "a": [2]}|{"y": true, "x": null}|"not json"`; err != nil || got != want {
		t.Errorf("got %q %v want %q", got, err, want)
	}
}

func TestKwargsFromJSON(t *testing.T) {
	kw, err := KwargsFromJSON([]byte(`{"enable_thinking": false, "extra": {"z": 1, "a": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := New(`{{ enable_thinking }} {{ extra | tojson }}`, nil)
	got, err := tmpl.Render(t.Context(), Input{Kwargs: kw})
	if err != nil || got != `False {"z": 1, "a": 2}` {
		t.Errorf("got %q %v", got, err)
	}
	for _, bad := range []string{`[1]`, `{"tools": []}`, `{`} {
		if _, err := KwargsFromJSON([]byte(bad)); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

// chat_template.json is read by its key's exact name, as transformers
// reads it (a dict): a "Chat_Template" after chat_template is a key of its
// own, which encoding/json took case-insensitively as the template.
func TestProcessorTemplateKeyExact(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"tokenizer_config.json": `{"bos_token": "<s>"}`,
		"chat_template.json":    `{"chat_template": "processor {{ bos_token }}", "Chat_Template": "other"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmpl, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Render(t.Context(), Input{}); err != nil || got != "processor <s>" {
		t.Errorf("got %q, %v; want the chat_template key's template", got, err)
	}
}

// TestLoadSpecialTokensMap checks that the special tokens a template sees
// (and modelfolder's stop token, read from them) follow special_tokens_map.json
// as transformers 4.x reads it: in a folder whose tokenizer_config.json has
// no added_tokens_decoder, every key of the map replaces the config's (the
// huggyllama/llama-7b folder writes bos_token "" in the config and "<s>" in
// the map); additional_special_tokens are the config's followed by the
// map's it lacks; in a folder with added_tokens_decoder the map is not read.
func TestLoadSpecialTokensMap(t *testing.T) {
	const tmplSrc = `{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ additional_special_tokens|join(",") }}`
	cases := []struct {
		name, cfg, smap, want string
	}{
		{"legacy: the map's tokens",
			`{"bos_token": "", "eos_token": "", "pad_token": "<pad>", "additional_special_tokens": ["<a>"]}`,
			`{"bos_token": "<s>", "eos_token": {"content": "</s>", "lstrip": false}, "additional_special_tokens": ["<b>", {"content": "<a>"}]}`,
			"<s>|</s>|<pad>|<a>,<b>"},
		{"legacy: no config keys",
			`{}`,
			`{"bos_token": "<s>", "eos_token": "</s>", "pad_token": null}`,
			"<s>|</s>||"},
		{"added_tokens_decoder: not read",
			`{"bos_token": "<s>", "eos_token": "</s>", "added_tokens_decoder": {}}`,
			`{"bos_token": "<x>", "eos_token": "<y>", "pad_token": "<z>"}`,
			"<s>|</s>||"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := `{"chat_template": ` + strconv.Quote(tmplSrc) + `, ` + strings.TrimPrefix(c.cfg, "{")
			if c.cfg == `{}` {
				cfg = `{"chat_template": ` + strconv.Quote(tmplSrc) + `}`
			}
			for name, body := range map[string]string{"tokenizer_config.json": cfg, "special_tokens_map.json": c.smap} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tmpl, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := tmpl.Render(t.Context(), Input{}); err != nil || got != c.want {
				t.Errorf("Render = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"tokenizer_config.json": `{"chat_template": "x"}`, "special_tokens_map.json": `{"bos_token": 5}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "special_tokens_map.json") {
		t.Errorf("bad special_tokens_map.json: %v, want an error naming it", err)
	}
}
