package chattemplate

import (
	"context"
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
)

// TestArgumentsAsTextWhereTheTemplatePrintsThem: a template that puts a
// tool call's arguments into the prompt as text (DeepSeek-R1's
// '```json\n' + tool['function']['arguments'] + ..., or a plain
// {{ arguments }}) gets the text the model wrote, not the repr of the dict
// that templates using tojson are given; before, the prompt held
// {'city': 'Paris', 'days': 2.0, 'metric': True} where the model had
// sampled {"city": "Paris", "days": 2.0, "metric": true}. Templates that
// render the dict themselves see the dict as before.
func TestArgumentsAsTextWhereTheTemplatePrintsThem(t *testing.T) {
	const args = `{"city": "Paris", "days": 2.0, "metric": true}`
	msgs := []chatmsg.Message{
		{Role: "user", Content: "weather?"},
		{Role: "assistant", ToolCalls: []chatmsg.ToolCall{{ID: "c1", Name: "weather", Arguments: args}, {ID: "c2", Name: "now", Arguments: `{}`}}},
		{Role: "tool", ToolCallID: "c1", Content: "rain"},
	}
	calls := `{% for m in messages %}{% for c in m.tool_calls or [] %}`
	end := `{% endfor %}{% endfor %}`
	cases := []struct{ name, src, want string }{
		{"concatenated", calls + `{{ '<call>' + c['function']['name'] + '\n' + c['function']['arguments'] + '</call>' }}` + end,
			"<call>weather\n" + args + "</call><call>now\n{}</call>"},
		{"printed", calls + `{{ c.function.arguments }};` + end, args + ";{};"},
		{"tojson", calls + `{{ c.function.arguments | tojson }};` + end, `{"city": "Paris", "days": 2.0, "metric": true};{};`},
		{"string test", calls + `{% if c.function.arguments is string %}S{% else %}{{ c.function.arguments.city }}{% endif %};` + end, "Paris;;"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, err := New(c.src, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tm.Render(context.Background(), Input{Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestArgumentsDictWhereOnlyContentEchoesThem: a template that renders
// arguments with tojson keeps the dict when the repr of the arguments
// appears in the conversation for another reason (a Python tool that
// echoes str(args) in its result): only the template printing the dict
// itself makes the arguments text.
func TestArgumentsDictWhereOnlyContentEchoesThem(t *testing.T) {
	msgs := []chatmsg.Message{
		{Role: "assistant", ToolCalls: []chatmsg.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city": "Paris"}`}}},
		{Role: "tool", ToolCallID: "c1", Content: "called with {'city': 'Paris'}"},
	}
	tm, err := New(`{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}{% endfor %}[{{ m.content }}]{% endfor %}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tm.Render(context.Background(), Input{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"city": "Paris"}[][called with {'city': 'Paris'}]`; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
