package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/spf13/cobra"
)

type tokenizeOptions struct {
	Model     string
	Decode    bool
	Special   bool
	NoSpecial bool
	Text      string
	TextSet   bool
}

func newTokenizeCmd(a *app) *cobra.Command {
	var o tokenizeOptions
	cmd := &cobra.Command{
		Use:   "tokenize --model DIR [--decode] [--no-special]",
		Short: "Turn text into a model's token ids, or ids back into text",
		Long: `tokenize reads text on stdin (or --text) and prints its token ids with the
tokenizer of a Hugging Face model folder (tokenizer.json or
tokenizer.json.gz) as one JSON array. The text is taken byte for byte: a
trailing newline is a token too (use printf, not echo).

Special tokens: with --special (the default) the tokenizer's post-processor
adds its special tokens (Llama's <|begin_of_text|>; Qwen adds none), as
transformers' add_special_tokens=True does (for Llama 2, Mistral and Gemma
folders, the bos_token and eos_token that tokenizer_config.json's
add_bos_token and add_eos_token turn on), and on --decode special tokens
are kept in the text. --no-special adds none and, on --decode, leaves
special tokens out. Special-token text inside the input (say
"<|im_end|>") becomes its single id either way, as in transformers.

With --decode, stdin holds a JSON array of ids and the decoded text is
printed as it is, with no newline added.`,
		Example: `  printf 'Hello, world!' | hone-inspect tokenize --model testdata/tokenizers/qwen3
  [9707,11,1879,0]
  echo '[9707,11,1879,0]' | hone-inspect tokenize --model testdata/tokenizers/qwen3 --decode
  Hello, world!
  hone-inspect tokenize --model ~/models/Llama-3.2-1B-Instruct --no-special --text 'hi'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.TextSet = cmd.Flags().Changed("text")
			if cmd.Flags().Changed("special") && o.NoSpecial {
				return cli.Usagef("--special and --no-special contradict each other")
			}
			if o.NoSpecial {
				o.Special = false
			}
			return runTokenize(cmd.Context(), a, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Model, "model", "", "model folder holding tokenizer.json or tokenizer.json.gz (required)")
	fs.BoolVar(&o.Decode, "decode", false, "read a JSON array of ids and print their text")
	fs.BoolVar(&o.Special, "special", true, "add the post-processor's special tokens; on --decode keep special tokens")
	fs.BoolVar(&o.NoSpecial, "no-special", false, "add no special tokens; on --decode skip them")
	fs.StringVar(&o.Text, "text", "", "the text to tokenize, instead of stdin")
	cmd.MarkFlagRequired("model")
	return cmd
}

func runTokenize(ctx context.Context, a *app, o tokenizeOptions) error {
	if o.Decode && o.TextSet {
		return cli.Usagef("--text is for encoding; --decode reads ids on stdin")
	}
	var in []byte
	var err error
	if o.TextSet {
		in = []byte(o.Text)
	} else if in, err = readStdin(ctx, a.stdin); err != nil {
		return err
	}
	var ids []int
	if o.Decode { // check the input before the slow tokenizer load
		// Pointers, because encoding/json decodes null into an int as 0
		// without an error: [1, null] would decode token 0 ("!" in Qwen's
		// vocabulary), and a bare null would print nothing.
		var raw []*int
		dec := json.NewDecoder(bytes.NewReader(in))
		if err := dec.Decode(&raw); err != nil {
			return cli.BadInputf("stdin: want a JSON array of token ids: %w", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return cli.BadInputf("stdin: more after the JSON array of token ids")
		}
		if raw == nil {
			return cli.BadInputf("stdin: want a JSON array of token ids, got null")
		}
		ids = make([]int, len(raw))
		for i, id := range raw {
			if id == nil {
				return cli.BadInputf("stdin: ids[%d]: want a token id, got null", i)
			}
			ids[i] = *id
		}
	}
	m, err := loadModel(o.Model, withTokenizer)
	if err != nil {
		return err
	}
	tok := m.Tokenizer
	if o.Decode {
		for i, id := range ids {
			if _, ok := tok.Token(id); !ok {
				return cli.BadInputf("stdin: ids[%d] = %d is not a token of %s (vocabulary of %d)", i, id, o.Model, tok.VocabSize())
			}
		}
		_, err := io.WriteString(a.stdout, tok.Decode(ids, !o.Special))
		return err
	}
	ids = tok.Encode(string(in), o.Special)
	if ids == nil {
		ids = []int{}
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = a.stdout.Write(b)
	return err
}

// readStdin reads all of stdin, giving up when ctx ends.
func readStdin(ctx context.Context, r io.Reader) ([]byte, error) {
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := io.ReadAll(r)
		ch <- res{b, err}
	}()
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("read stdin: %w", r.err)
		}
		return r.b, nil
	}
}
