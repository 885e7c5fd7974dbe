package layout

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
)

// Model is what a model folder says about text: its chat template and its
// tokenizer. It backs `hone-inspect render` and `hone-inspect tokenize`.
type Model struct {
	Template  *chattemplate.Template
	Tokenizer *tokenizer.Tokenizer
}

// LoadModel reads the chat template (tokenizer_config.json,
// chat_template.jinja) and the tokenizer (tokenizer.json or
// tokenizer.json.gz) of a Hugging Face model folder.
func LoadModel(dir string) (*Model, error) {
	tmpl, err := chattemplate.Load(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("tokenizer in %s: %w", dir, err)
	}
	return &Model{Template: tmpl, Tokenizer: tok}, nil
}

// Render renders a trajectory's conversation with the model's template.
func (m *Model) Render(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	return Render(ctx, m.Template, msgs, tools, addGenerationPrompt, kwargs)
}

// Layout lays out a trajectory's conversation (see Build).
func (m *Model) Layout(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool, opt Options) (*Layout, error) {
	return FromTrajectory(ctx, m.Template, m.Tokenizer, msgs, tools, opt)
}

// WriteSequence writes one line per token of s, tab-separated: position,
// id, "T" for trainable or "." for context, the logprob ("-" when unknown)
// and the token's text as a Go-quoted string (so "\n" and partial UTF-8
// bytes stay visible). A header line names the columns.
func (m *Model) WriteSequence(w io.Writer, s Sequence) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "pos\tid\ttrain\tlogprob\ttoken\n")
	for i, id := range s.IDs {
		mark := "."
		if s.Trainable[i] {
			mark = "T"
		}
		lp := "-"
		if !math.IsNaN(float64(s.Logprobs[i])) {
			lp = strconv.FormatFloat(float64(s.Logprobs[i]), 'g', 6, 32)
		}
		text, _ := m.Tokenizer.TokenBytes(int(id))
		fmt.Fprintf(bw, "%d\t%d\t%s\t%s\t%s\n", i, id, mark, lp, strconv.Quote(string(text)))
	}
	return bw.Flush()
}
