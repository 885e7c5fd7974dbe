package serve

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// servedCalls starts the tiny model with the real template of family, has
// it answer out (forceOutput), and returns the message of the plain answer
// and of the streamed one (accumulated as the OpenAI SDK does).
func servedCalls(t *testing.T, family, out string, edit func(*openai.ChatCompletionNewParams)) (plain, streamed openai.ChatCompletionChoice) {
	t.Helper()
	ts := startServer(t, Options{Model: tinyWithTemplate(t, family)}, func(s *Server) {
		ids := toInt32(s.tok.Encode(out, false))
		s.forceOutput = func([]int32, int) []int32 { return ids }
	})
	p := chatParams("tiny", 1, 400)
	p.Tools = []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "write_file",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
				"path": map[string]any{"type": "string"}, "text": map[string]any{"type": "string"}}}}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time"}),
	}
	if edit != nil {
		edit(&p)
	}
	resp, err := ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := ts.client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return resp.Choices[0], acc.Choices[0]
}

// TestToolCallArgumentHoldsEndTag: a string argument that holds the text
// </tool_call> (a file about tool calls being written) does not end the
// call: the call is parsed whole, plain and streamed, with the text around
// it as content (the block was cut at the first </tool_call>, failed to
// parse and was returned as content, so the call was lost).
func TestToolCallArgumentHoldsEndTag(t *testing.T) {
	args := `{"path": "doc.md", "text": "Calls look like <tool_call>{\"name\": \"f\"}</tool_call> in Qwen's output."}`
	out := "Writing the page.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": " + args + "}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"
	plain, streamed := servedCalls(t, "qwen2.5", out, nil)
	for what, ch := range map[string]openai.ChatCompletionChoice{"plain": plain, "streamed": streamed} {
		calls := ch.Message.ToolCalls
		if ch.FinishReason != "tool_calls" || len(calls) != 2 || ch.Message.Content != "Writing the page." {
			t.Fatalf("%s: finish %q, content %q, %d calls %+v", what, ch.FinishReason, ch.Message.Content, len(calls), calls)
		}
		if calls[0].Function.Name != "write_file" || calls[0].Function.Arguments != args || calls[1].Function.Name != "get_time" || calls[1].Function.Arguments != "{}" {
			t.Errorf("%s: calls %+v", what, calls)
		}
	}
}

// TestParallelToolCallsFalse: with parallel_tool_calls false a message
// holds the first call the model wrote and no other, plain and streamed, as
// OpenAI's API and vLLM answer (the field was ignored: both calls came
// back, to an agent that had asked for one at a time).
func TestParallelToolCallsFalse(t *testing.T) {
	out := "Writing the page.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.md\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"
	plain, streamed := servedCalls(t, "qwen2.5", out, func(p *openai.ChatCompletionNewParams) { p.ParallelToolCalls = openai.Bool(false) })
	for what, ch := range map[string]openai.ChatCompletionChoice{"plain": plain, "streamed": streamed} {
		calls := ch.Message.ToolCalls
		if ch.FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "write_file" || calls[0].Function.Arguments != `{"path": "a.md"}` {
			t.Errorf("%s: finish %q, %d calls %+v; want the write_file call alone", what, ch.FinishReason, len(calls), calls)
		}
	}
	plain, _ = servedCalls(t, "qwen2.5", out, func(p *openai.ChatCompletionNewParams) { p.ParallelToolCalls = openai.Bool(true) })
	if len(plain.Message.ToolCalls) != 2 {
		t.Errorf("parallel_tool_calls true: %d calls, want 2", len(plain.Message.ToolCalls))
	}
}

// TestLlamaCallArgumentHoldsHermesTag: a Llama 3 JSON call whose string
// argument holds the text <tool_call> (a page about Qwen's tool calls
// being written) is a call, plain and streamed (the output was read as
// Hermes markup for holding the tag, no Hermes call was found, and the
// call came back as content: lost, even under tool_choice "required").
func TestLlamaCallArgumentHoldsHermesTag(t *testing.T) {
	args := `{"path": "qwen.md", "text": "Qwen wraps each call in <tool_call> tags."}`
	out := `{"name": "write_file", "parameters": ` + args + `}`
	plain, streamed := servedCalls(t, "llama3.1", out, nil)
	for what, ch := range map[string]openai.ChatCompletionChoice{"plain": plain, "streamed": streamed} {
		calls := ch.Message.ToolCalls
		if ch.FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "write_file" || calls[0].Function.Arguments != args {
			t.Errorf("%s: finish %q, content %q, %d calls %+v; want the write_file call", what, ch.FinishReason, ch.Message.Content, len(calls), calls)
		}
	}
}
