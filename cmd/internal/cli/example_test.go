package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/spf13/pflag"
)

// A stage binary's main with the shared conventions: flags, inputs, an
// atomic output, logs, progress, and one exit code.
func Example() {
	cli.Main("hone-example", func(ctx context.Context) error {
		fs := pflag.NewFlagSet("hone-example", pflag.ContinueOnError)
		var logOpts cli.LogOptions
		logOpts.AddFlags(fs)
		out := fs.StringP("output", "o", "", "output Parquet file (default stdout)")
		if err := fs.Parse(os.Args[1:]); err != nil {
			return cli.Usage(err)
		}
		log, err := logOpts.Logger(os.Stderr)
		if err != nil {
			return err
		}
		inputs, err := cli.ResolveInputs(ctx, fs.Args(), fileset.Options{})
		if err != nil {
			return err
		}
		defer inputs.Close() // removes the copy of stdin
		progress := cli.NewProgress(os.Stderr, "groups", int64(inputs.Len()))
		progress.Start(ctx)
		defer progress.Stop()
		err = cli.WriteOutput(ctx, *out, os.Stdout, true, func(w io.Writer) error {
			for i := range inputs.Len() {
				in, err := inputs.Open(ctx, i)
				if err != nil {
					return cli.BadInput(err)
				}
				_, err = io.Copy(w, in.Reader()) // a real stage decodes and writes groups
				in.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", in.Name, err)
				}
				if err := ctx.Err(); err != nil {
					return err // nothing partial is committed
				}
				progress.Add(1, 0)
			}
			return nil
		})
		if err != nil {
			return err
		}
		log.Info(progress.Summary())
		return nil
	})
}
