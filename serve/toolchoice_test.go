package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// qwenTiny is the tiny model with Qwen2.5's chat template (Hermes tool calls).
func qwenTiny(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(tinyDir(t))); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "testdata", "templates", "qwen2.5", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestToolChoiceForcesACall: with a named tool_choice the random tiny model
// still answers with a call of that function whose arguments fit its
// parameter schema; with "required" the output is a call in the template's
// markup.
func TestToolChoiceForcesACall(t *testing.T) {
	ts := startServer(t, Options{Model: qwenTiny(t)}, nil)
	tools := []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
				"city": map[string]any{"type": "string", "maxLength": 6}, "days": map[string]any{"enum": []int{1, 2, 3}}}},
		}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time"}),
	}
	p := chatParams("tiny", 3, 120)
	p.Tools = tools
	p.N = openai.Int(4)
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}}}
	resp, err := ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range resp.Choices {
		if ch.FinishReason != "stop" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" {
			t.Fatalf("named tool_choice: %+v", ch)
		}
		var args struct {
			City *string `json:"city"`
			Days *int    `json:"days"`
		}
		if err := json.Unmarshal([]byte(ch.Message.ToolCalls[0].Function.Arguments), &args); err != nil || args.City == nil || utf8.RuneCountInString(*args.City) > 6 || args.Days == nil {
			t.Fatalf("arguments %q do not fit the parameters (%v)", ch.Message.ToolCalls[0].Function.Arguments, err)
		}
	}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	resp, err = ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range resp.Choices {
		if ch.FinishReason == "tool_calls" {
			if n := ch.Message.ToolCalls[0].Function.Name; n != "get_weather" && n != "get_time" {
				t.Fatalf("required: call of %q", n)
			}
		} else if !strings.HasPrefix(ch.Message.Content, "<tool_call>\n{\"name\":\"get_") {
			t.Fatalf("required: output %q is not a call", ch.Message.Content)
		}
	}
}

// TestToolChoiceWithResponseFormat: a forced call and a response_format both
// constrain the output, so together they are a 400 on response_format that
// names the tool_choice given: "required", or the named function (which was
// reported as "required").
func TestToolChoiceWithResponseFormat(t *testing.T) {
	ts := startServer(t, Options{Model: qwenTiny(t)}, nil)
	tools := `[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]`
	for choice, want := range map[string]string{
		`"required"`: `tool_choice \"required\"`,
		`{"type":"function","function":{"name":"lookup"}}`: `naming the function \"lookup\"`,
	} {
		status, body := ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":4,
			"tools":`+tools+`,"tool_choice":`+choice+`,"response_format":{"type":"json_object"}}`)
		if status != 400 || !strings.Contains(body, `"param":"response_format"`) || !strings.Contains(body, want) {
			t.Errorf("tool_choice %s with response_format: %d %s; want a 400 on response_format naming %s", choice, status, body, want)
		}
	}
}

// TestForcedCallArgumentsAreAnObject: a named tool_choice whose function's
// parameters are {} (or say nothing that constrains) still gets an object
// for its arguments. The parameters compiled to "any value", so the random
// model wrote "arguments":5, "x" or null, and the call came back with
// arguments that are no JSON object ("x" not even JSON).
func TestForcedCallArgumentsAreAnObject(t *testing.T) {
	ts := startServer(t, Options{Model: qwenTiny(t)}, nil)
	for _, params := range []string{`{}`, `{"description":"no arguments"}`, `true`} {
		body := `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":150,"n":8,"seed":5,
			"tools":[{"type":"function","function":{"name":"ping","parameters":` + params + `}}],
			"tool_choice":{"type":"function","function":{"name":"ping"}}}`
		status, out := ts.post(t, "/v1/chat/completions", body)
		if status != 200 {
			t.Fatalf("parameters %s: %d %s", params, status, out)
		}
		var resp struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					ToolCalls []struct {
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatal(err)
		}
		for i, ch := range resp.Choices {
			if ch.FinishReason != "stop" || len(ch.Message.ToolCalls) != 1 {
				t.Fatalf("parameters %s choice %d: no call: %+v", params, i, ch)
			}
			var args map[string]any
			if a := ch.Message.ToolCalls[0].Function.Arguments; json.Unmarshal([]byte(a), &args) != nil || args == nil {
				t.Errorf("parameters %s choice %d: arguments %q are not a JSON object", params, i, a)
			}
		}
	}
}

// chatCalls posts body and returns each choice's finish reason and calls.
func chatCalls(t *testing.T, ts *testServer, body string) (status int, out string, choices []chatChoiceCalls) {
	t.Helper()
	status, out = ts.post(t, "/v1/chat/completions", body)
	if status != 200 {
		return status, out, nil
	}
	var resp struct {
		Choices []chatChoiceCalls `json:"choices"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	return status, out, resp.Choices
}

type chatChoiceCalls struct {
	FinishReason string `json:"finish_reason"`
	Message      struct {
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct{ Name, Arguments string } `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
}

// TestRequiredArgumentsFollowTheirTool: with tool_choice "required" each
// call's arguments follow the parameters of the function it names, as
// vLLM's anyOf over the tools has them. Only the name was constrained,
// the arguments to any object, so the random model wrote arguments of
// neither schema ({}, {"x":[…]}, a city of any length).
func TestRequiredArgumentsFollowTheirTool(t *testing.T) {
	ts := startServer(t, Options{Model: qwenTiny(t)}, nil)
	body := `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":120,"n":8,"seed":3,"tool_choice":"required",
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":6},"days":{"enum":[1,2,3]}}}}},
		{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"enum":["utc","cet"]}},"required":["tz"]}}}]}`
	status, out, choices := chatCalls(t, ts, body)
	if status != 200 {
		t.Fatalf("%d %s", status, out)
	}
	for i, ch := range choices {
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
			t.Fatalf("choice %d: no call: %+v", i, ch)
		}
		f := ch.Message.ToolCalls[0].Function
		var args map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f.Arguments), &args); err != nil {
			t.Fatalf("choice %d: arguments %q: %v", i, f.Arguments, err)
		}
		var ok bool
		switch f.Name {
		case "get_weather":
			var city string
			days := string(args["days"])
			ok = len(args) == 2 && json.Unmarshal(args["city"], &city) == nil && utf8.RuneCountInString(city) <= 6 && (days == "1" || days == "2" || days == "3")
		case "get_time":
			tz := string(args["tz"])
			ok = len(args) == 1 && (tz == `"utc"` || tz == `"cet"`)
		}
		if !ok {
			t.Errorf("choice %d: call of %q with arguments %s, which do not follow its parameters", i, f.Name, f.Arguments)
		}
	}
}

// TestStrictToolSchema: a forced call of a function with "strict": true
// whose parameters use a keyword constrained decoding cannot enforce is a
// 400 on tools naming the function and the keyword (the arguments were
// silently let be any object, which strict rules out); without strict the
// call is forced with any object for its arguments, as before, and a
// strict function with a schema constrain reads is forced as usual.
func TestStrictToolSchema(t *testing.T) {
	ts := startServer(t, Options{Model: qwenTiny(t)}, nil)
	tools := func(strict string) string {
		return `[{"type":"function","function":{"name":"pick","strict":` + strict + `,"parameters":{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}}},
			{"type":"function","function":{"name":"plain","strict":true,"parameters":{"type":"object","properties":{"q":{"type":"string","maxLength":4}}}}}]`
	}
	// A named call finishes "stop", a required one "tool_calls" (TestNamedToolChoiceFinishStop).
	for choice, finish := range map[string]string{`"required"`: "tool_calls", `{"type":"function","function":{"name":"pick"}}`: "stop"} {
		body := `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":120,"n":2,"tool_choice":` + choice + `,"tools":`
		status, out, _ := chatCalls(t, ts, body+tools("true")+`}`)
		if status != 400 || !strings.Contains(out, `"param":"tools"`) || !strings.Contains(out, `\"pick\"`) || !strings.Contains(out, `anyOf`) {
			t.Errorf("tool_choice %s, strict: %d %s; want a 400 on tools naming pick and anyOf", choice, status, out)
		}
		status, out, choices := chatCalls(t, ts, body+tools("false")+`}`)
		if status != 200 {
			t.Fatalf("tool_choice %s, not strict: %d %s", choice, status, out)
		}
		for i, ch := range choices {
			if ch.FinishReason != finish || len(ch.Message.ToolCalls) != 1 {
				t.Errorf("tool_choice %s, not strict, choice %d: no call: %+v", choice, i, ch)
			}
		}
	}
	body := `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":120,"n":2,"tool_choice":{"type":"function","function":{"name":"plain"}},"tools":` + tools("true") + `}`
	if status, out, choices := chatCalls(t, ts, body); status != 200 || len(choices) != 2 || choices[0].FinishReason != "stop" || len(choices[0].Message.ToolCalls) != 1 {
		t.Errorf("strict function with a supported schema: %d %s", status, out)
	}
}
