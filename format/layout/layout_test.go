package layout

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
)

const (
	templates  = "../../testdata/templates"
	tokenizers = "../../testdata/tokenizers"
)

type model struct {
	name string
	tmpl *chattemplate.Template
	tok  *tokenizer.Tokenizer
	stop string // end-of-turn token text
}

var (
	loadOnce   sync.Once
	loaded     []model
	loadFailed error
)

// models pairs each template with the real tokenizer of its family; the
// tiny ChatML template runs on Qwen3's tokenizer, which knows its tokens.
// They are loaded once for all tests.
func models(t testing.TB) []model {
	t.Helper()
	loadOnce.Do(func() { loaded, loadFailed = loadModels() })
	if loadFailed != nil {
		t.Fatal(loadFailed)
	}
	return loaded
}

func loadModels() ([]model, error) {
	toks := map[string]*tokenizer.Tokenizer{}
	var out []model
	for _, m := range []struct{ name, tmplDir, tokDir, stop string }{
		{"qwen3", "qwen3", "qwen3", "<|im_end|>"},
		{"qwen2.5", "qwen2.5", "qwen3", "<|im_end|>"},
		{"llama3.1", "llama3.1", "llama3", "<|eot_id|>"},
		{"chatml", "chatml", "qwen3", "<|im_end|>"},
	} {
		tmpl, err := chattemplate.Load(filepath.Join(templates, m.tmplDir))
		if err != nil {
			return nil, err
		}
		tok := toks[m.tokDir]
		if tok == nil {
			if tok, err = tokenizer.Load(filepath.Join(tokenizers, m.tokDir)); err != nil {
				return nil, err
			}
			toks[m.tokDir] = tok
		}
		out = append(out, model{m.name, tmpl, tok, m.stop})
	}
	return out, nil
}

var weatherTool = trajectory.Tool{Type: "function", Name: "get_weather", Description: "Weather for a city.",
	Parameters: `{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`}

// toolConversation has tool calls, results, and two user queries, every
// assistant turn trainable. Qwen2.5, Llama 3.1 and ChatML render it
// prefix-preserving; Qwen3 does not (the final assistant turn gets an empty
// <think> block that later renderings leave out).
func toolConversation() []trajectory.Message {
	return []trajectory.Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "Weather in Oslo?"},
		{Role: "assistant", Trainable: true, ToolCalls: []trajectory.ToolCall{{ID: "c1", Type: "function", Name: "get_weather", Arguments: `{"city": "Oslo"}`}}},
		{Role: "tool", ToolCallID: "c1", Content: `{"temp": -3}`},
		{Role: "assistant", Trainable: true, Content: "It is -3 °C in Oslo."},
		{Role: "user", Content: "And tomorrow?"},
		{Role: "assistant", Trainable: true, Content: "I cannot tell."},
	}
}

func decode(tok *tokenizer.Tokenizer, ids []int32) string {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return tok.Decode(out, false)
}

// TestRenderedTextAndMask: without sampled ids the sequence decodes to the
// template's rendering, and the mask covers exactly each assistant turn's
// text up to and including its end-of-turn token.
func TestRenderedTextAndMask(t *testing.T) {
	for _, m := range models(t) {
		t.Run(m.name, func(t *testing.T) {
			msgs := toolConversation()
			tools := []trajectory.Tool{weatherTool}
			l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, tools, Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantSeqs := 1
			if m.name == "qwen3" {
				wantSeqs = 3
			}
			if len(l.Sequences) != wantSeqs {
				t.Fatalf("%d sequences, want %d", len(l.Sequences), wantSeqs)
			}
			masked := 0
			for _, s := range l.Sequences {
				masked += checkSequence(t, m, msgs, tools, s)
			}
			if masked != l.NumTrainable() {
				t.Errorf("%d tokens in turns, %d trainable in all", masked, l.NumTrainable())
			}
		})
	}
}

// checkSequence: the sequence decodes to the rendering of the conversation
// through its last turn, and each turn's span is the rendered turn text up
// to and including the end-of-turn token, all of it trainable. It returns
// the number of tokens in turns.
func checkSequence(t *testing.T, m model, msgs []trajectory.Message, tools []trajectory.Tool, s Sequence) int {
	t.Helper()
	last := s.Turns[len(s.Turns)-1].Message
	full, err := Render(t.Context(), m.tmpl, msgs[:last+1], tools, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(m.tok, s.IDs); got != full {
		t.Fatalf("decoded ids differ from the rendering:\n got %q\nwant %q", got, full)
	}
	// And the ids are the tokenizer's encoding of that text as a whole,
	// what transformers' apply_chat_template(tokenize=True) returns.
	if want := toInt32(m.tok.Encode(full, false)); !slices.Equal(s.IDs, want) {
		t.Errorf("ids differ from Encode(rendering): %d vs %d tokens", len(s.IDs), len(want))
	}
	checkConsistent(t, s)
	masked := 0
	for _, turn := range s.Turns {
		prompt, err := Render(t.Context(), m.tmpl, msgs[:turn.Message], tools, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		upTo, err := Render(t.Context(), m.tmpl, msgs[:turn.Message+1], tools, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := upTo[len(prompt):]
		want = want[:strings.Index(want, m.stop)+len(m.stop)]
		if got := decode(m.tok, s.IDs[turn.Start:turn.End]); got != want {
			t.Errorf("message %d: trainable span decodes to %q, want %q", turn.Message, got, want)
		}
		for i := turn.Start; i < turn.End; i++ {
			if !s.Trainable[i] {
				t.Errorf("message %d: token %d inside the turn is not trainable", turn.Message, i)
			}
		}
		masked += turn.End - turn.Start
	}
	return masked
}

// checkConsistent: slices line up; logprobs are NaN off the mask.
func checkConsistent(t *testing.T, s Sequence) {
	t.Helper()
	if len(s.Trainable) != len(s.IDs) || len(s.Logprobs) != len(s.IDs) {
		t.Fatalf("lengths ids %d mask %d logprobs %d", len(s.IDs), len(s.Trainable), len(s.Logprobs))
	}
	for i := range s.IDs {
		if !s.Trainable[i] && !math.IsNaN(float64(s.Logprobs[i])) {
			t.Errorf("token %d: logprob %v off the mask", i, s.Logprobs[i])
		}
	}
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// TestSampledIDsSplicedVerbatim: sampled ids replace the re-tokenized text,
// logprobs stay aligned, the sampled stop token replaces the template's, and
// a turn whose ids are not what re-rendering gives starts a new sequence at
// the next prompt.
func TestSampledIDsSplicedVerbatim(t *testing.T) {
	m := models(t)[3] // ChatML, prefix-preserving, on Qwen3's tokenizer
	imEnd, _ := m.tok.TokenID("<|im_end|>")
	// Turn 1: canonical ids of the text plus the stop token, as vLLM
	// returns them with finish_reason "stop".
	ids1 := append(m.tok.Encode("Hello there.", false), imEnd)
	// Turn 2: the same kind of answer but spelled one byte-level token per
	// character — ids a re-tokenization would never produce — and no stop
	// token (finish_reason "length").
	var ids2 []int
	for _, ch := range "Okay" {
		ids2 = append(ids2, m.tok.Encode(string(ch), false)...)
	}
	lps := func(n int, base float32) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = base - float32(i)/100
		}
		return out
	}
	msgs := []trajectory.Message{
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello there.", Trainable: true, TokenIDs: toInt32(ids1), Logprobs: lps(len(ids1), -0.5), FinishReason: "stop"},
		{Role: "user", Content: "Say okay"},
		{Role: "assistant", Content: "Okay", Trainable: true, TokenIDs: toInt32(ids2), Logprobs: lps(len(ids2), -1), FinishReason: "length"},
		{Role: "user", Content: "Again"},
		{Role: "assistant", Content: "Okay", Trainable: false},
	}
	l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var turns []Turn
	var seqOf []int
	for si, s := range l.Sequences {
		checkConsistent(t, s)
		for _, tr := range s.Turns {
			turns = append(turns, tr)
			seqOf = append(seqOf, si)
		}
	}
	if len(turns) != 3 {
		t.Fatalf("%d turns", len(turns))
	}
	for k, want := range [][]int{ids1, ids2} {
		tr, s := turns[k], l.Sequences[seqOf[k]]
		if !tr.Sampled || !tr.Trainable {
			t.Errorf("turn %d: %+v", k, tr)
		}
		got := s.IDs[tr.Start:tr.End]
		if len(got) != len(want) {
			t.Fatalf("turn %d: %d ids spliced, want %d", k, len(got), len(want))
		}
		for i := range want {
			if int(got[i]) != want[i] || !s.Trainable[tr.Start+i] || s.Logprobs[tr.Start+i] != msgs[tr.Message].Logprobs[i] {
				t.Errorf("turn %d token %d: id %d (want %d) trainable %v logprob %v (want %v)", k, i, got[i], want[i],
					s.Trainable[tr.Start+i], s.Logprobs[tr.Start+i], msgs[tr.Message].Logprobs[i])
			}
		}
		if tr.Start > 0 && s.Trainable[tr.Start-1] || tr.End < len(s.IDs) && s.Trainable[tr.End] {
			t.Errorf("turn %d: mask spills outside the sampled ids", k)
		}
	}
	// Turn 1 ended with its own <|im_end|>: the template's copy is dropped,
	// only the "\n" glue follows.
	s0 := l.Sequences[seqOf[0]]
	if after := decode(m.tok, s0.IDs[turns[0].End:turns[0].End+2]); after != "\n<|im_start|>" {
		t.Errorf("after sampled stop: %q", after)
	}
	// Turn 2 was cut by length: the template's <|im_end|> follows, untrained.
	s1 := l.Sequences[seqOf[1]]
	if int(s1.IDs[turns[1].End]) != imEnd || s1.Trainable[turns[1].End] {
		t.Errorf("after a length-cut turn want an untrained <|im_end|>, got id %d trainable %v", s1.IDs[turns[1].End], s1.Trainable[turns[1].End])
	}
	// Turn 1's ids are the canonical tokenization, so turn 2 extends the same
	// sequence; turn 2's are not, so the model's next prompt (re-rendered
	// from text) does not extend it, and turn 3 starts a new sequence that
	// begins with exactly that prompt.
	if seqOf[0] != seqOf[1] || seqOf[2] != seqOf[1]+1 {
		t.Fatalf("sequences of turns: %v", seqOf)
	}
	prompt3, _ := Render(t.Context(), m.tmpl, msgs[:5], nil, true, nil)
	s2 := l.Sequences[seqOf[2]]
	if got := decode(m.tok, s2.IDs[:turns[2].Start]); got != prompt3 {
		t.Errorf("new sequence starts with %q, want the prompt %q", got, prompt3)
	}
	for i := turns[2].Start; i < turns[2].End; i++ {
		if s2.Trainable[i] {
			t.Fatal("a non-trainable assistant turn is masked in")
		}
	}
}

// TestQwen3DroppedThinkStartsNewSequence: Qwen3 renders the <think> block
// of an assistant turn only while it follows the last user message, so the
// prompt of a later turn does not extend the earlier layout. Each turn is
// laid out against the prompt the model saw.
func TestQwen3DroppedThinkStartsNewSequence(t *testing.T) {
	m := models(t)[0]
	msgs := []trajectory.Message{
		{Role: "user", Content: "2+2?"},
		{Role: "assistant", Content: "<think>\nSmall sum.\n</think>\n\n4", Trainable: true},
		{Role: "user", Content: "3+3?"},
		{Role: "assistant", Content: "<think>\nAlso small.\n</think>\n\n6", Trainable: true},
	}
	l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Sequences) != 2 {
		t.Fatalf("%d sequences, want 2", len(l.Sequences))
	}
	want := []string{"<think>\nSmall sum.\n</think>\n\n4<|im_end|>", "<think>\nAlso small.\n</think>\n\n6<|im_end|>"}
	for i, s := range l.Sequences {
		checkConsistent(t, s)
		tr := s.Turns[0]
		if got := decode(m.tok, s.IDs[tr.Start:tr.End]); got != want[i] {
			t.Errorf("sequence %d: turn %q, want %q", i, got, want[i])
		}
		prompt, _ := Render(t.Context(), m.tmpl, msgs[:tr.Message], nil, true, nil)
		if got := decode(m.tok, s.IDs[:tr.Start]); got != prompt {
			t.Errorf("sequence %d: prompt %q, want %q", i, got, prompt)
		}
	}
	if strings.Contains(decode(m.tok, l.Sequences[1].IDs), "Small sum") {
		t.Error("the second prompt must not contain the dropped think block")
	}
}

func TestFinishLengthWithoutIDsLeavesStopUntrained(t *testing.T) {
	m := models(t)[3] // ChatML
	msgs := []trajectory.Message{{Role: "user", Content: "Count"}, {Role: "assistant", Content: "1 2 3", Trainable: true, FinishReason: "length"}}
	l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Sequences[0]
	tr := s.Turns[0]
	if got := decode(m.tok, s.IDs[tr.Start:tr.End]); got != "1 2 3" {
		t.Errorf("trainable %q", got)
	}
	if got := decode(m.tok, s.IDs[tr.End:]); got != "<|im_end|>\n" || s.Trainable[tr.End] {
		t.Errorf("after the turn %q", got)
	}
}

// TestLogprobsWithoutIDsAreUnknown: logprobs given without the token ids
// they belong to (a server that returned none, an ART file with OpenAI's
// text-token logprobs) are laid out as unknown, the turn tokenized from its
// text; they were an error ("1 logprobs for 0 sampled token ids") that no
// flag got past, so such files could not be trained on.
func TestLogprobsWithoutIDsAreUnknown(t *testing.T) {
	m := models(t)[3] // ChatML
	msgs := []trajectory.Message{{Role: "user", Content: "Count"}, {Role: "assistant", Content: "1 2 3", Trainable: true, Logprobs: []float32{-0.5, -0.25}}}
	l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Sequences[0]
	tr := s.Turns[0]
	if got := decode(m.tok, s.IDs[tr.Start:tr.End]); got != "1 2 3<|im_end|>" || tr.Sampled {
		t.Errorf("turn %q (sampled %v), want the text's tokens and the stop", got, tr.Sampled)
	}
	for i := tr.Start; i < tr.End; i++ {
		if !s.Trainable[i] || !math.IsNaN(float64(s.Logprobs[i])) {
			t.Errorf("token %d: trainable %v, logprob %v; want trainable with an unknown logprob", i, s.Trainable[i], s.Logprobs[i])
		}
	}
}

func TestBadInput(t *testing.T) {
	m := models(t)[3]
	msgs := []trajectory.Message{{Role: "user", Content: "x"}, {Role: "assistant", Content: "y", Trainable: true, TokenIDs: []int32{1, 2}, Logprobs: []float32{-1}}}
	if _, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{}); err == nil || !strings.Contains(err.Error(), "message 1") {
		t.Errorf("logprob count mismatch: %v", err)
	}
	if _, err := Build(t.Context(), m.tmpl, m.tok, Messages(msgs), nil, nil, Options{}); err == nil {
		t.Error("missing turn data: want an error")
	}
	l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs[:1], nil, Options{})
	if err != nil || len(l.Sequences) != 0 {
		t.Errorf("no assistant turn: %v %v", l, err)
	}
}

func TestModelHelpers(t *testing.T) {
	dir := t.TempDir()
	// A model folder: Qwen3's tokenizer files plus its template.
	for _, f := range []struct{ src, dst string }{
		{filepath.Join(tokenizers, "qwen3", "tokenizer.json.gz"), "tokenizer.json.gz"},
		{filepath.Join(templates, "qwen3", "tokenizer_config.json"), "tokenizer_config.json"},
	} {
		b, err := os.ReadFile(f.src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []trajectory.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Yo\n", Trainable: true, TokenIDs: nil}}
	text, err := m.Render(t.Context(), msgs, nil, false, nil)
	if err != nil || text != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nYo\n<|im_end|>\n" {
		t.Fatalf("render %q %v", text, err)
	}
	l, err := m.Layout(t.Context(), msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := m.WriteSequence(&sb, l.Sequences[0]); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n")
	if len(lines) != len(l.Sequences[0].IDs)+1 || lines[0] != "pos\tid\ttrain\tlogprob\ttoken" {
		t.Fatalf("%d lines for %d tokens:\n%s", len(lines), len(l.Sequences[0].IDs), sb.String())
	}
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, "\t.\t-\t\"\\n\"") {
		t.Errorf("last line %q: want the untrained newline after <|im_end|>", last)
	}
	if !strings.Contains(sb.String(), "\tT\t-\t\"<|im_end|>\"") {
		t.Errorf("no trained <|im_end|> line:\n%s", sb.String())
	}
}

// TestBoundaryMerge: a turn starting with "\n" after the prompt's
// "assistant\n" merges into one "\n\n" token when the whole text is encoded;
// the model saw the prompt's tokens and then generated, so the prompt keeps
// its own tokens and the turn is tokenized on its own.
func TestBoundaryMerge(t *testing.T) {
	m := models(t)[1] // Qwen2.5 template, Qwen3 tokenizer
	msgs := []trajectory.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "\nHello", Trainable: true}}
	l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Sequences[0]
	prompt, _ := Render(t.Context(), m.tmpl, msgs[:1], nil, true, nil)
	full, _ := Render(t.Context(), m.tmpl, msgs, nil, false, nil)
	if whole := m.tok.Encode(full, false); slices.Equal(toInt32(whole), s.IDs) {
		t.Fatal("test premise: encoding the whole text should merge across the boundary")
	}
	tr := s.Turns[0]
	if !slices.Equal(s.IDs[:tr.Start], toInt32(m.tok.Encode(prompt, false))) {
		t.Error("the prompt part is not the prompt's own tokens")
	}
	if got := decode(m.tok, s.IDs[tr.Start:tr.End]); got != "\nHello<|im_end|>" {
		t.Errorf("turn %q", got)
	}
	if got := decode(m.tok, s.IDs); got != full {
		t.Errorf("sequence %q, want %q", got, full)
	}
}

// BenchmarkLayout lays out a 10-turn tool conversation (Qwen2.5 template,
// Qwen3 tokenizer); each turn renders and encodes its whole prefix twice.
func BenchmarkLayout(b *testing.B) {
	m := models(b)[1]
	var msgs []trajectory.Message
	msgs = append(msgs, trajectory.Message{Role: "system", Content: "You are terse."})
	for i := range 10 {
		msgs = append(msgs,
			trajectory.Message{Role: "user", Content: strings.Repeat("Tell me about the weather in Oslo, please. ", 5)},
			trajectory.Message{Role: "assistant", Trainable: true, ToolCalls: []trajectory.ToolCall{{ID: strconv.Itoa(i), Name: "get_weather", Arguments: `{"city": "Oslo"}`}}},
			trajectory.Message{Role: "tool", ToolCallID: strconv.Itoa(i), Content: `{"temp": -3, "sky": "snow"}`},
			trajectory.Message{Role: "assistant", Trainable: true, Content: strings.Repeat("It is cold and snowing. ", 8)})
	}
	tools := []trajectory.Tool{weatherTool}
	b.ResetTimer()
	tokens := 0
	for b.Loop() {
		l, err := FromTrajectory(b.Context(), m.tmpl, m.tok, msgs, tools, Options{})
		if err != nil {
			b.Fatal(err)
		}
		tokens = len(l.Sequences[0].IDs)
	}
	b.ReportMetric(float64(tokens), "tokens/conversation")
}

// TestNullContentToolCall: OpenAI servers return content null on tool-call
// turns; Qwen3's template would fail on null, so it is rendered as "".
func TestNullContentToolCall(t *testing.T) {
	m := models(t)[0]
	msgs := []trajectory.Message{
		{Role: "user", Content: "Weather in Oslo?"},
		{Role: "assistant", ContentParts: "null", Trainable: true, ToolCalls: []trajectory.ToolCall{{ID: "a", Type: "function", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
	}
	l, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, []trajectory.Tool{weatherTool}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Sequences[0]
	tr := s.Turns[0]
	want := "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>"
	if got := decode(m.tok, s.IDs[tr.Start:tr.End]); got != want {
		t.Errorf("turn %q, want %q", got, want)
	}
}

// TestThinkingMismatchIsAnError: a turn with reasoning laid out with
// enable_thinking=false (the prompt ends in an empty think block) cannot be
// split into prompt and turn.
func TestThinkingMismatchIsAnError(t *testing.T) {
	m := models(t)[0]
	msgs := []trajectory.Message{{Role: "user", Content: "2+2?"}, {Role: "assistant", Content: "<think>\nSum.\n</think>\n\n4", Trainable: true}}
	_, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{Kwargs: map[string]any{"enable_thinking": false}})
	if err == nil || !strings.Contains(err.Error(), "enable_thinking") {
		t.Errorf("got %v", err)
	}
	if _, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, nil, Options{}); err != nil {
		t.Errorf("with thinking enabled: %v", err)
	}
}

// TestToolCallsTheTemplateDropsAreAnError: a trainable assistant turn with
// tool calls, laid out from a template without a tool-call format (the
// ChatML of hone-train init-model renders only the content), rendered as
// an empty turn: SFT trained the model to answer "<|im_end|>" where the
// message calls a tool. It is an error naming the message and the call.
// The same turn untrained, or sampled (its ids are trained as they are),
// or under a template that renders calls, lays out as before.
func TestToolCallsTheTemplateDropsAreAnError(t *testing.T) {
	m := models(t)[3] // ChatML on Qwen3's tokenizer
	plain, err := chattemplate.New("{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}", nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := toolConversation()
	tools := []trajectory.Tool{weatherTool}
	_, err = FromTrajectory(t.Context(), plain, m.tok, msgs, tools, Options{})
	if err == nil || !strings.Contains(err.Error(), "message 2") || !strings.Contains(err.Error(), `"get_weather"`) {
		t.Fatalf("tool call dropped by the template: %v, want an error naming message 2 and get_weather", err)
	}
	untrained := toolConversation()
	untrained[2].Trainable = false
	if _, err := FromTrajectory(t.Context(), plain, m.tok, untrained, tools, Options{}); err != nil {
		t.Errorf("the call's turn untrained: %v", err)
	}
	sampled := toolConversation()
	for _, id := range m.tok.Encode("<tool_call>get_weather</tool_call>", false) {
		sampled[2].TokenIDs = append(sampled[2].TokenIDs, int32(id))
	}
	if _, err := FromTrajectory(t.Context(), plain, m.tok, sampled, tools, Options{}); err != nil {
		t.Errorf("the call's turn sampled: %v", err)
	}
	if _, err := FromTrajectory(t.Context(), m.tmpl, m.tok, msgs, tools, Options{}); err != nil {
		t.Errorf("a template that renders calls: %v", err)
	}
}

// mistralTemplate is Mistral 7B Instruct's shape of chat template: the
// answer glued right after " [/INST]", no space between, closed by </s>.
const mistralTemplate = "{{ bos_token }}{% for message in messages %}" +
	"{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}" +
	"{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}"

// TestBoundaryMergeLlama2: on the llama2 package's tokenizer (Llama 2's
// kind: a Prepend "▁" normalizer), an answer "]] ok" after "[/INST]"
// merges with the prompt's "]" when the whole text is encoded, so the turn
// is tokenized after the prompt's own tokens. It continues the prompt's
// text: it has no "▁" of its own before "]]" (the Prepend put one before
// the whole text only), so its tokens spell the turn exactly, and from the
// first token boundary the turn shares with the whole text's encoding on,
// its ids are the whole text's. Before, the turn was encoded as a text of
// its own, "▁]" "]" …: a space the model never wrote, trained.
func TestBoundaryMergeLlama2(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join(tokenizers, "llama2"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chattemplate.New(mistralTemplate, map[string]string{"bos_token": "<s>", "eos_token": "</s>"})
	if err != nil {
		t.Fatal(err)
	}
	for _, answer := range []string{"]] ok", ": yes, ok."} {
		t.Run(answer, func(t *testing.T) {
			msgs := []trajectory.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: answer, Trainable: true}}
			l, err := FromTrajectory(t.Context(), tmpl, tok, msgs, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			prompt, _ := Render(t.Context(), tmpl, msgs[:1], nil, true, nil)
			full, _ := Render(t.Context(), tmpl, msgs, nil, false, nil)
			whole, spans := tok.EncodeWithOffsets(full, false)
			promptIDs := tok.Encode(prompt, false)
			if slices.Equal(whole[:min(len(promptIDs), len(whole))], promptIDs) {
				t.Fatal("test premise: encoding the whole text should merge across the boundary")
			}
			s := l.Sequences[0]
			tr := s.Turns[0]
			if !slices.Equal(s.IDs[:tr.Start], toInt32(promptIDs)) {
				t.Fatal("the prompt part is not the prompt's own tokens")
			}
			turn := s.IDs[tr.Start:]
			// Where each turn token starts in full: a piece token stands
			// for its text, "▁" for a space, as a stream decodes it.
			dec := tok.NewStreamDecoder(false)
			spelled, starts := "", map[int]int{}
			for i, id := range turn {
				starts[len(prompt)+len(spelled)] = i
				spelled += dec.Add(int(id))
			}
			if want := full[len(prompt):]; spelled+dec.Flush() != want {
				t.Errorf("the turn's tokens spell %q, want %q", spelled, want)
			}
			for k, sp := range spans {
				if i, ok := starts[sp.Start]; ok && sp.Start > len(prompt) {
					if !slices.Equal(toInt32(whole[k:]), turn[i:]) {
						t.Errorf("from byte %d on, the turn's ids %v differ from the whole text's %v", sp.Start, turn[i:], whole[k:])
					}
					return
				}
			}
			t.Fatal("the turn shares no token boundary with the whole text's encoding")
		})
	}
}
