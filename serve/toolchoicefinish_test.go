package serve

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// TestNamedToolChoiceFinishStop: a call forced by a named tool_choice ends
// with finish_reason "stop", streamed or whole, as OpenAI's API and vLLM
// answer it, while "required" ends "tool_calls". The named call said
// "tool_calls", so a client comparing finish reasons across servers saw
// Hone differ.
func TestNamedToolChoiceFinishStop(t *testing.T) {
	ts := startServer(t, Options{Model: qwenTiny(t)}, nil)
	p := chatParams("tiny", 3, 120)
	p.N = openai.Int(2)
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "lookup", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"q": map[string]any{"enum": []string{"a", "b"}}}},
	})}
	for choice, want := range map[string]string{"named": "stop", "required": "tool_calls"} {
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
		if choice == "named" {
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
				Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "lookup"}}}
		}
		resp, err := ts.client.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for i, ch := range resp.Choices {
			if ch.FinishReason != want || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "lookup" {
				t.Errorf("%s, choice %d: finish %q with %d calls; want %q with a call of lookup", choice, i, ch.FinishReason, len(ch.Message.ToolCalls), want)
			}
		}
		st := ts.client.Chat.Completions.NewStreaming(context.Background(), p)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		for i, ch := range acc.Choices {
			if ch.FinishReason != want || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "lookup" {
				t.Errorf("%s streamed, choice %d: finish %q with %d calls; want %q with a call of lookup", choice, i, ch.FinishReason, len(ch.Message.ToolCalls), want)
			}
		}
	}
}
