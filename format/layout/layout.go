package layout

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/trajectory"
)

// Tokenizer is what layout needs of a tokenizer; *tokenizer.Tokenizer
// satisfies it. Encode is called with addSpecial false: chat templates write
// their own begin-of-text token, as in transformers' apply_chat_template.
// EncodeContinuation(prev, text) is text's ids where it follows prev's own
// ids, without what a tokenizer puts before the start of a text (Llama 2's
// "▁"), since a turn continues its prompt.
type Tokenizer interface {
	Encode(text string, addSpecial bool) []int
	EncodeContinuation(prev, text string) []int
	TokenID(token string) (int, bool)
}

// Options adjust a layout.
type Options struct {
	// Kwargs are the template kwargs the conversation was served with, e.g.
	// {"enable_thinking": false}. They must match the server's, or the
	// prompts differ from what the model saw.
	Kwargs map[string]any
	// StopTokens are the ids that end an assistant turn: a model folder's
	// (modelfolder.Folder.StopTokens, which Model.Layout passes), so that a
	// turn ends where serve stopped generating it. Empty means what the
	// same rule gives without the folder's generation config: the
	// template's eos_token alone.
	StopTokens []int
	// Now is the time the conversation was sampled at, which the template's
	// strftime_now prints (chattemplate.Input.Now): zero means the time of
	// the layout, read once for all its renderings (Build).
	Now time.Time
}

// Layout is a laid-out conversation.
type Layout struct {
	Sequences []Sequence
}

// Sequence is one token sequence with per-token training data. All slices
// have the same length.
type Sequence struct {
	IDs       []int32
	Trainable []bool    // true on tokens the policy produced in trainable turns
	Logprobs  []float32 // sampling logprob of trainable tokens; NaN elsewhere and where unknown
	Turns     []Turn    // the assistant turns laid out in this sequence, in order
}

// Turn locates one assistant message in a Sequence.
type Turn struct {
	Message int // index into the conversation's messages
	// [Start, End) are the tokens the policy produced for this message
	// (including the stop token when it produced one); the template's glue
	// after it is not included.
	Start, End int
	Trainable  bool // the message is trainable: its tokens are masked in
	Sampled    bool // the server's sampled ids were used
}

// NumTrainable counts the trainable tokens over all sequences.
func (l *Layout) NumTrainable() int {
	n := 0
	for _, s := range l.Sequences {
		for _, m := range s.Trainable {
			if m {
				n++
			}
		}
	}
	return n
}

// TurnData is what the server reported for one message when the policy
// produced it; Build reads it for assistant messages only.
type TurnData struct {
	Trainable    bool
	TokenIDs     []int32   // sampled ids, nil when not known
	Logprobs     []float32 // one per TokenIDs entry, or nil
	FinishReason string
}

// FromTrajectory lays out a trajectory's messages and tools.
func FromTrajectory(ctx context.Context, t *chattemplate.Template, tok Tokenizer, msgs []trajectory.Message, tools []trajectory.Tool, opt Options) (*Layout, error) {
	chat := Messages(msgs)
	data := make([]TurnData, len(msgs))
	for i, m := range msgs {
		data[i] = TurnData{Trainable: m.Trainable, TokenIDs: m.TokenIDs, Logprobs: m.Logprobs, FinishReason: m.FinishReason}
	}
	ts, err := Tools(tools)
	if err != nil {
		return nil, err
	}
	return Build(ctx, t, tok, chat, data, ts, opt)
}

// Messages converts trajectory messages to the template's messages
// (trajectory.Message.Chat). Null content and a list of content parts are
// passed on as they were: chattemplate.Render gives null to the template as
// "" or an empty list, and parts as the list or as their text, as the
// template takes content (and as hone-serve and vLLM render it), so that a
// turn is laid out with the prompt hone-serve showed the model.
func Messages(msgs []trajectory.Message) []chatmsg.Message {
	out := make([]chatmsg.Message, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Chat()
	}
	return out
}

// Tools converts trajectory tools to the OpenAI function-tool JSON the
// template receives.
func Tools(tools []trajectory.Tool) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, t := range tools {
		raw, err := t.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("tool %d: %w", i, err)
		}
		out = append(out, raw)
	}
	return out, nil
}

// Build lays out msgs; data[i] describes msgs[i] (only assistant entries are
// read). See the package comment for the method.
func Build(ctx context.Context, t *chattemplate.Template, tok Tokenizer, msgs []chatmsg.Message, data []TurnData, tools []json.RawMessage, opt Options) (*Layout, error) {
	if len(data) != len(msgs) {
		return nil, fmt.Errorf("layout: %d messages but %d turn records", len(msgs), len(data))
	}
	stops := stopSet(t, tok, opt.StopTokens)
	if opt.Now.IsZero() {
		// One time for every rendering below: a clock read per
		// rendering printed another date in a prompt than in the turn
		// after it when the layout crossed midnight.
		opt.Now = t.Now()
	}
	render := func(n int, agp bool) (string, error) {
		return t.Render(ctx, chattemplate.Input{Messages: msgs[:n], Tools: tools, AddGenerationPrompt: agp, Kwargs: opt.Kwargs, Now: opt.Now})
	}

	var out Layout
	var seq *Sequence
	for a, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		d := data[a]
		if len(d.TokenIDs) == 0 {
			// Logprobs without the ids they belong to (a server that gave
			// no token ids, an ART file with text tokens, OpenAI's default)
			// cannot be placed on the tokens laid out here: unknown, as
			// when there are none (hone-train --allow-no-logprobs).
			d.Logprobs = nil
		}
		if err := checkSampled(a, d); err != nil {
			return nil, err
		}
		prompt, err := render(a, true)
		if err != nil {
			return nil, fmt.Errorf("layout: message %d: prompt: %w", a, err)
		}
		full, err := render(a+1, false)
		if err != nil {
			return nil, fmt.Errorf("layout: message %d: %w", a, err)
		}
		if len(full) < len(prompt) || full[:len(prompt)] != prompt {
			return nil, fmt.Errorf("layout: message %d: the conversation through this turn does not render as the prompt for it (with add_generation_prompt) followed by the turn, so the turn's tokens cannot be told apart; check that Options.Kwargs (e.g. enable_thinking) are those the server used", a)
		}
		promptIDs := tok.Encode(prompt, false)
		fullIDs := tok.Encode(full, false)
		var turnIDs []int
		if hasPrefix(fullIDs, promptIDs) {
			turnIDs = fullIDs[len(promptIDs):]
		} else {
			// The boundary between prompt and turn merges into one token
			// when encoded whole; the model saw the prompt's tokens and
			// then generated, so tokenize the turn on its own, as the
			// text after the prompt's: Encode of it alone would put a
			// Prepend normalizer's "▁" before it, a space the turn lacks.
			turnIDs = tok.EncodeContinuation(prompt, full[len(prompt):])
		}

		// Extend the current sequence when the prompt continues it;
		// otherwise start again from the full prompt.
		if seq != nil && hasPrefix32(promptIDs, seq.IDs) {
			seq.appendContext(promptIDs[len(seq.IDs):])
		} else {
			if seq != nil {
				out.Sequences = append(out.Sequences, *seq)
			}
			seq = &Sequence{}
			seq.appendContext(promptIDs)
		}

		stop := len(turnIDs) // index of the template's end-of-turn token
		for i, id := range turnIDs {
			if stops[id] {
				stop = i
				break
			}
		}
		sampled := len(d.TokenIDs) > 0
		turn := Turn{Message: a, Start: len(seq.IDs), Trainable: d.Trainable, Sampled: sampled}
		if sampled {
			for i, id := range d.TokenIDs {
				lp := float32(math.NaN())
				if len(d.Logprobs) > 0 {
					lp = d.Logprobs[i]
				}
				seq.append(int(id), d.Trainable, lp)
			}
			turn.End = len(seq.IDs)
			rest := turnIDs[min(stop, len(turnIDs)):]
			if n := len(d.TokenIDs); n > 0 && stops[int(d.TokenIDs[n-1])] && len(rest) > 0 {
				rest = rest[1:] // the sampled stop token replaces the template's
			}
			seq.appendContext(rest)
		} else {
			if err := checkCallsRendered(a, m, d, full[len(prompt):]); err != nil {
				return nil, err
			}
			end := stop
			if stop < len(turnIDs) && d.FinishReason != "length" {
				end = stop + 1 // the model ended its turn: train the stop token too
			}
			for _, id := range turnIDs[:end] {
				seq.append(id, d.Trainable, float32(math.NaN()))
			}
			turn.End = len(seq.IDs)
			seq.appendContext(turnIDs[end:])
		}
		seq.Turns = append(seq.Turns, turn)
	}
	if seq != nil {
		out.Sequences = append(out.Sequences, *seq)
	}
	return &out, nil
}

// checkCallsRendered refuses a trainable turn laid out from the template
// (no sampled ids) whose tool calls the template leaves out of text, the
// turn as rendered: one without a tool-call format (the ChatML of
// hone-train init-model, Gemma's) renders only the content, and the turn
// would teach the model to answer with it alone, where the message calls
// a tool. Every call format writes the function's name, so a call whose
// name is missing from the turn was dropped.
func checkCallsRendered(a int, m chatmsg.Message, d TurnData, text string) error {
	if !d.Trainable {
		return nil
	}
	for i, c := range m.ToolCalls {
		if !strings.Contains(text, c.Name) {
			return fmt.Errorf("layout: message %d: its tool call %d (%q) is not in the turn the chat template renders (%q): the template has no tool-call format, so the turn would train without the call; use a model folder whose template renders tool_calls", a, i, c.Name, text)
		}
	}
	return nil
}

func checkSampled(a int, d TurnData) error {
	if len(d.Logprobs) > 0 && len(d.Logprobs) != len(d.TokenIDs) {
		return fmt.Errorf("layout: message %d: %d logprobs for %d sampled token ids", a, len(d.Logprobs), len(d.TokenIDs))
	}
	for i, id := range d.TokenIDs {
		if id < 0 {
			return fmt.Errorf("layout: message %d: sampled token %d has negative id %d", a, i, id)
		}
	}
	return nil
}

func (s *Sequence) append(id int, trainable bool, lp float32) {
	s.IDs = append(s.IDs, int32(id))
	s.Trainable = append(s.Trainable, trainable)
	if !trainable {
		lp = float32(math.NaN())
	}
	s.Logprobs = append(s.Logprobs, lp)
}

func (s *Sequence) appendContext(ids []int) {
	for _, id := range ids {
		s.append(id, false, 0)
	}
}

// stopSet resolves the ids that end an assistant turn.
func stopSet(t *chattemplate.Template, tok Tokenizer, explicit []int) map[int]bool {
	ids := explicit
	if len(ids) == 0 {
		ids = modelfolder.StopTokens(nil, t, tok)
	}
	set := make(map[int]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

func hasPrefix(s, prefix []int) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i := range prefix {
		if s[i] != prefix[i] {
			return false
		}
	}
	return true
}

func hasPrefix32(s []int, prefix []int32) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i := range prefix {
		if s[i] != int(prefix[i]) {
			return false
		}
	}
	return true
}

// Render renders a whole conversation with its tools, as served (no
// generation prompt unless agp): the text `hone-inspect render` shows.
func Render(ctx context.Context, t *chattemplate.Template, msgs []trajectory.Message, tools []trajectory.Tool, agp bool, kwargs map[string]any) (string, error) {
	ts, err := Tools(tools)
	if err != nil {
		return "", err
	}
	return t.Render(ctx, chattemplate.Input{Messages: Messages(msgs), Tools: ts, AddGenerationPrompt: agp, Kwargs: kwargs})
}
