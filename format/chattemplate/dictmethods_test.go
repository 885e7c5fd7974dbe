package chattemplate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
)

// TestDictMethodsBeforeKeys: a called items(), keys(), values() or get()
// of a dict is the dict's method, as jinja2 reads it, whatever keys the
// dict holds. A tool with a parameter named "items" made a template's
// properties.items() call that parameter's schema ("is not callable"),
// where transformers renders the tool list. The wants are what jinja2
// 3.1 renders.
func TestDictMethodsBeforeKeys(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "add_to_cart", "parameters": {"type": "object",
		"properties": {"items": {"type": "array", "items": {"type": "string"}}, "keys": {"type": "string"}, "get": {"type": "integer"}, "values": {"type": "number"}}}}}`)
	props := "{% set p = tools[0].function.parameters.properties %}"
	cases := []struct{ src, want string }{
		{props + "{% for k, v in p.items() %}[{{ k }}:{{ v.type }}]{% endfor %}", "[items:array][keys:string][get:integer][values:number]"},
		{props + "{{ p.keys()|join(',') }}", "items,keys,get,values"},
		{props + "{{ p.values()|map(attribute='type')|join(',') }}", "array,string,integer,number"},
		{props + "{{ p.get('get').type }} {{ p.get('nope', 'x') }} {{ p.get('nope') }}", "integer x None"},
		// the key read without a call is still the key's value
		{props + "{{ p['items'].type }} {{ p.get('items')['items'].type }}", "array string"},
		// a namespace's own callable of that name is called, as jinja2 does
		{"{% macro m() %}mine{% endmacro %}{% set ns = namespace(items=m) %}{{ ns.items() }}", "mine"},
		{"{% set d = {'b': 1, 'a': 2} %}{{ d.items()|map('first')|join }}", "ba"},
	}
	msgs := []chatmsg.Message{{Role: "user", Content: "x"}}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Messages: msgs, Tools: []json.RawMessage{tool}})
		if err != nil || got != c.want {
			t.Errorf("%s:\ngot  %q (%v)\nwant %q", c.src, got, err, c.want)
		}
	}
}

// TestDictMethodMisuse: the methods refuse what Python's do, naming the
// method, and a value with no such method has no such attribute.
func TestDictMethodMisuse(t *testing.T) {
	cases := []struct{ src, want string }{
		{"{% set d = {'a': 1} %}{{ d.items(1) }}", "dict.items() takes no arguments (1 given)"},
		{"{% set d = {'a': 1} %}{{ d.get() }}", "get expected at least 1 argument, got 0"},
		{"{% set d = {'a': 1} %}{{ d.get(1, 2, 3) }}", "get expected at most 2 arguments, got 3"},
		{"{% set d = {'a': 1} %}{{ d.keys(x=1) }}", "dict.keys() takes no keyword arguments"},
		{"{% set l = [1, 2] %}{{ l.items() }}", "has no attribute 'items'"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Messages: []chatmsg.Message{{Role: "user", Content: "x"}}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %q, %v; want an error with %q", c.src, got, err, c.want)
		}
	}
}
