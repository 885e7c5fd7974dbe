package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/cobra"
)

type renderOptions struct {
	Model  string
	AGP    bool
	Kwargs string
	IDs    bool
	Train  string
}

func newRenderCmd(a *app) *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render --model DIR [--add-generation-prompt] [--ids] < conversation.json",
		Short: "Render a conversation with a model's chat template, or show its token ids and training mask",
		Long: `render reads one conversation on stdin, a JSON object in the OpenAI chat
shape {"messages": [...], "tools": [...]} (tools optional; messages may
carry tool_calls, tool results and reasoning_content), and prints the text
the chat template of a Hugging Face model folder (tokenizer_config.json or
chat_template.jinja, plus tokenizer.json) renders it to, exactly, with no
newline added. "add_generation_prompt" and "chat_template_kwargs" in the
object are used unless the flags are given.

With --ids it prints the token ids the trainer would see instead, one line
per token: position, id, T (trained) or . (context), the sampling logprob
(- when unknown) and the token text, Go-quoted. A conversation that a
template does not render prefix-preserving (Qwen3 drops older <think>
blocks) becomes several sequences, each after a "# sequence K/N" line. By
default every assistant message is trained (--train assistant); --train
marked trains only messages with "trainable": true (where none says
true, the assistant messages that do not say "trainable": false). With
--add-generation-prompt, --ids shows the prompt a server would send the
model, all context.`,
		Example: `  echo '{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"}]}' |
    hone-inspect render --model ~/models/Qwen3-1.7B --chat-template-kwargs '{"enable_thinking":false}'
  echo '{"messages":[{"role":"user","content":"Hi"}]}' | hone-inspect render --model DIR --add-generation-prompt
  echo '{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"}]}' |
    hone-inspect render --model DIR --ids`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			agpSet := cmd.Flags().Changed("add-generation-prompt")
			kwSet := cmd.Flags().Changed("chat-template-kwargs")
			return runRender(cmd.Context(), a, o, agpSet, kwSet)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Model, "model", "", "model folder with the chat template and tokenizer (required)")
	fs.BoolVar(&o.AGP, "add-generation-prompt", false, "end with the prompt that starts an assistant turn")
	fs.StringVar(&o.Kwargs, "chat-template-kwargs", "", `template kwargs as a JSON object, e.g. '{"enable_thinking":false}'`)
	fs.BoolVar(&o.IDs, "ids", false, "print token ids and the training mask instead of the text")
	fs.StringVar(&o.Train, "train", "assistant", "with --ids: which messages are trained: assistant (all assistant messages) or marked")
	cmd.MarkFlagRequired("model")
	return cmd
}

// conversationExtras are the request keys besides messages and tools that
// change the rendering.
type conversationExtras struct {
	AddGenerationPrompt *bool          `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any `json:"chat_template_kwargs"`
}

func runRender(ctx context.Context, a *app, o renderOptions, agpSet, kwSet bool) error {
	if o.Train != "assistant" && o.Train != "marked" {
		return cli.Usagef("--train %q: want assistant or marked", o.Train)
	}
	var kwargs map[string]any
	if kwSet {
		if err := json.Unmarshal([]byte(o.Kwargs), &kwargs); err != nil || kwargs == nil {
			return cli.Usagef("--chat-template-kwargs %q: want a JSON object", o.Kwargs)
		}
	}
	in, err := readStdin(ctx, a.stdin)
	if err != nil {
		return err
	}
	var extras conversationExtras
	if err := json.Unmarshal(in, &extras); err != nil {
		return cli.BadInputf("stdin: want a JSON object {\"messages\": [...], \"tools\": [...]}: %w", err)
	}
	if !agpSet && extras.AddGenerationPrompt != nil {
		o.AGP = *extras.AddGenerationPrompt
	}
	if !kwSet {
		kwargs = extras.ChatTemplateKwargs
	}
	// The trajectory JSONL reader parses the OpenAI chat shape (content
	// parts, tool calls with arguments as text or, as Hugging Face's
	// examples write them, as objects, reasoning_content); it wants the
	// object on one line.
	var line bytes.Buffer
	if err := json.Compact(&line, in); err != nil {
		return cli.BadInputf("stdin: %w", err)
	}
	groups, _, err := trajectory.ImportJSONL(ctx, &line, "stdin")
	if err != nil {
		return classify(err)
	}
	if len(groups) != 1 || len(groups[0].Trajectories) != 1 {
		return cli.BadInputf("stdin: want one conversation")
	}
	t := groups[0].Trajectories[0]
	parts := withTemplate
	if o.IDs {
		parts |= withTokenizer
	}
	m, err := loadModel(o.Model, parts)
	if err != nil {
		return err
	}
	if !o.IDs {
		text, err := m.Render(ctx, t.Messages, t.Tools, o.AGP, kwargs)
		if err != nil {
			return cli.BadInputf("render with the template of %s: %w", o.Model, err)
		}
		_, err = io.WriteString(a.stdout, text)
		return err
	}
	var seqs []layout.Sequence
	if o.AGP {
		text, err := m.Render(ctx, t.Messages, t.Tools, true, kwargs)
		if err != nil {
			return cli.BadInputf("render with the template of %s: %w", o.Model, err)
		}
		seqs = []layout.Sequence{contextSequence(m.Tokenizer.Encode(text, false))}
	} else {
		if o.Train == "assistant" {
			for i := range t.Messages {
				t.Messages[i].Trainable = t.Messages[i].Role == "assistant"
			}
		}
		l, err := m.Layout(ctx, t.Messages, t.Tools, layout.Options{Kwargs: kwargs, Now: t.SampledAt()})
		if err != nil {
			return cli.BadInputf("lay out with the template of %s: %w", o.Model, err)
		}
		seqs = l.Sequences
		if len(seqs) == 0 {
			// No assistant message: nothing to train, the whole rendering
			// is context.
			text, err := m.Render(ctx, t.Messages, t.Tools, false, kwargs)
			if err != nil {
				return cli.BadInputf("render with the template of %s: %w", o.Model, err)
			}
			seqs = []layout.Sequence{contextSequence(m.Tokenizer.Encode(text, false))}
		}
	}
	for i, s := range seqs {
		if _, err := fmt.Fprintf(a.stdout, "# sequence %d/%d\n", i+1, len(seqs)); err != nil {
			return err
		}
		if err := m.WriteSequence(a.stdout, s); err != nil {
			return err
		}
	}
	return nil
}

// contextSequence is ids with nothing trained.
func contextSequence(ids []int) layout.Sequence {
	s := layout.Sequence{IDs: make([]int32, len(ids)), Trainable: make([]bool, len(ids)), Logprobs: make([]float32, len(ids))}
	for i, id := range ids {
		s.IDs[i] = int32(id)
		s.Logprobs[i] = float32(math.NaN())
	}
	return s
}
