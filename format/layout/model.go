package layout

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
)

// Model is what a model folder says about text: its chat template, its
// tokenizer and the ids that end a turn. It backs `hone-inspect render` and
// `hone-inspect tokenize`, and train lays conversations out with it.
type Model struct {
	Template  *chattemplate.Template
	Tokenizer *tokenizer.Tokenizer
	// StopTokens are the folder's ids that end a turn
	// (modelfolder.StopTokens), the ids serve stops generating on; Layout
	// passes them to Build.
	StopTokens []int
}

// FromFolder is the text side of an opened model folder (opened with at
// least modelfolder.Tokenizer and modelfolder.Template for Layout).
func FromFolder(f *modelfolder.Folder) *Model {
	return &Model{Template: f.Template, Tokenizer: f.Tokenizer, StopTokens: f.StopTokens}
}

// LoadModel opens the text side of the model folder dir: its chat template,
// tokenizer and stop ids (modelfolder.Open with Tokenizer and Template).
func LoadModel(dir string) (*Model, error) {
	f, err := modelfolder.Open(dir, modelfolder.Tokenizer|modelfolder.Template)
	if err != nil {
		return nil, err
	}
	return FromFolder(f), nil
}

// Render renders a trajectory's conversation with the model's template.
func (m *Model) Render(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	return Render(ctx, m.Template, msgs, tools, addGenerationPrompt, kwargs)
}

// Layout lays out a trajectory's conversation (see Build), its turns
// ending at the folder's stop ids unless opt names others.
func (m *Model) Layout(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool, opt Options) (*Layout, error) {
	if len(opt.StopTokens) == 0 {
		opt.StopTokens = m.StopTokens
	}
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
