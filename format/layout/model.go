package layout

import (
	"bufio"
	"context"
	"errors"
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
	// Vocab is the model's vocabulary size (config.json's vocab_size), or
	// 0 when the folder was opened without its config. Layout refuses a
	// token id at or past it: a tokenizer may know tokens the model has no
	// embedding for (Gemma 3 1B's <image_soft_token>, 262144, past its
	// 262144), and such a token written in a message must be an error
	// naming it, not a failed step.
	Vocab int
}

// FromFolder is the text side of an opened model folder (opened with at
// least modelfolder.Tokenizer and modelfolder.Template for Layout).
func FromFolder(f *modelfolder.Folder) *Model {
	m := &Model{Template: f.Template, Tokenizer: f.Tokenizer, StopTokens: f.StopTokens}
	if f.Config != nil {
		m.Vocab = f.Config.VocabSize
	}
	return m
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
	l, err := FromTrajectory(ctx, m.Template, m.Tokenizer, msgs, tools, opt)
	if err != nil || m.Vocab <= 0 {
		return l, err
	}
	for _, s := range l.Sequences {
		var pv *tokenizer.PastVocabError
		if !errors.As(tokenizer.CheckVocab(m.Tokenizer, s.IDs, m.Vocab), &pv) {
			continue
		}
		where := "a prompt" // the messages before a turn, as rendered
		for _, t := range s.Turns {
			if pv.Index >= t.Start && pv.Index < t.End {
				where = fmt.Sprintf("message %d", t.Message)
			}
		}
		return nil, fmt.Errorf("layout: %s holds %w", where, pv)
	}
	return l, nil
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
