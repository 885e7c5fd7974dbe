package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/tinymodel"
	"github.com/spf13/cobra"
)

func newInitModelCmd(stdout io.Writer) *cobra.Command {
	var opts tinymodel.Options
	var out string
	cmd := &cobra.Command{
		Use:   "init-model -o DIR",
		Short: "Write a randomly initialised tiny model folder",
		Long: `init-model writes a Hugging Face style model folder (config.json,
model.safetensors, generation_config.json, a byte-level tokenizer.json and a
tokenizer_config.json with a ChatML chat template) with random weights. The
same flags and --seed give the same files. DIR must not exist or be empty.

--family gemma3_text writes a Gemma 3 text model (Gemma3ForCausalLM: scaled
embeddings, (1+w) norms, q/k and sandwich norms, GELU-tanh) whose layers
alternate sliding (window --sliding-window) and full attention; its
tokenizer and ChatML template are the same as the other families'.

--init-std's default, 0.02, is Hugging Face's initializer_range: weights that
small make a model whose LoRA learns next to nothing in a few steps. To train
the model (README's round, the docs' own jobs), give --init-std 0.3, as the
first example does.`,
		Example: `  hone-train init-model --family qwen3 --hidden 64 --layers 2 --heads 4 --init-std 0.3 --seed 1 -o out/tiny
  hone-train init-model --family llama --hidden 64 --layers 2 --heads 4 --kv-heads 2 -o models/tiny-llama
  hone-train init-model --family qwen3 --hidden 48 --heads 4 --head-dim 16 --dtype BF16 --seed 7 -o models/tiny-qwen3
  hone-train init-model --family gemma3_text --hidden 64 --heads 4 --kv-heads 1 --sliding-window 16 --tie-embeddings -o models/tiny-gemma3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return cli.Usagef("init-model: -o DIR is required")
			}
			opts.Normalize()
			if _, err := opts.Config(); err != nil {
				return cli.Usage(err)
			}
			// Writing needs no arithmetic; the reference backend only satisfies model.New.
			if err := tinymodel.Write(cmd.Context(), out, opts, ref.New()); err != nil {
				if errors.Is(err, tinymodel.ErrExists) {
					return cli.Usage(err) // "DIR must not exist or be empty"
				}
				return err
			}
			c, _ := opts.Config()
			fmt.Fprintf(stdout, "wrote %s: %s, hidden %d, %d layers, %d/%d heads of %d, vocab %d\n",
				out, c.Family, c.Hidden, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.Vocab)
			return nil
		},
	}
	opts.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "model folder to create")
	return cmd
}
