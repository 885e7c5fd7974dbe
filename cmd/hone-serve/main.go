package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/serve"
)

const usage = `hone-serve serves a model folder over an OpenAI-compatible HTTP API.

Usage:
  hone-serve --model DIR [flags]

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
GET /health, GET /metrics. With --adapters DIR, every DIR/<run>/step-N/ PEFT
adapter named by DIR/<run>/latest is loaded as it appears and served as
"<run>" (newest) and "<run>@<N>"; requests in flight keep their adapter.

Example:
  hone-train init-model -o /tmp/tiny
  hone-serve --model /tmp/tiny --adapters runs/adapters --port 8000 &
  curl -s localhost:8000/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"seed":1}'

Exit codes: 0 drained after SIGINT/SIGTERM, 1 failure, 2 bad usage.

Flags:
`

func main() {
	cli.Main("hone-serve", func(ctx context.Context) error {
		return run(ctx, os.Args[1:], os.Stderr)
	})
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("hone-serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var opts serve.Options
	var logOpt cli.LogOptions
	var threads int
	opts.AddFlags(fs)
	logOpt.AddFlags(fs)
	fs.IntVar(&threads, "threads", 0, "CPU worker goroutines (0: all cores)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected arguments %q", fs.Args())
	}
	if opts.Model == "" {
		return cli.Usagef("--model is required")
	}
	log, err := logOpt.Logger(stderr)
	if err != nil {
		return err
	}
	opts.Log = log
	be, err := cpu.New(cpu.Options{Workers: threads})
	if err != nil {
		return err
	}
	defer be.Close()
	err = serve.Run(ctx, opts, be)
	if err == nil && ctx.Err() != nil {
		return nil // drained after a signal: a clean stop
	}
	return err
}
