package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/parquet-go/parquet-go"
	"github.com/spf13/cobra"
)

func newSchemaCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "schema [FILE|GLOB|DIR|-]...",
		Short: "Print the trajectory schema, or a file's schema and key-value metadata",
		Long: `Without arguments, schema prints the Parquet schema this build writes.
With files, it prints each file's own schema, row and row-group counts and
key-value metadata (the schema version is under "hone.schema_version"). Any
Parquet file can be shown, also one that is not a valid trajectory file.`,
		Example: `  hone-inspect schema
  hone-inspect schema runs/r1/step-000003.parquet`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSchema(cmd.Context(), a, args)
		},
	}
}

func runSchema(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		s, err := trajectorySchema()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "# trajectory schema version %d\n%s\n", trajectory.SchemaVersion, s)
		return err
	}
	set, err := cli.ResolveInputs(ctx, args, fileset.Options{Stdin: a.stdin})
	if err != nil {
		return err
	}
	defer set.Close()
	a.warnRepeated("schema", set)
	for i := range set.Len() {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		if err := printFileSchema(ctx, a, set, i); err != nil {
			return err
		}
	}
	return nil
}

// trajectorySchema is the schema the format package writes.
func trajectorySchema() (string, error) {
	return trajectory.Schema().String(), nil
}

func printFileSchema(ctx context.Context, a *app, set *fileset.Set, i int) error {
	in, err := set.Open(ctx, i)
	if err != nil {
		return classify(err)
	}
	defer in.Close()
	path := in.Name
	f, err := parquet.OpenFile(in, in.Size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return cli.BadInputf("%s: not a Parquet file: %w", path, err)
	}
	md := f.Metadata()
	w := a.stdout
	fmt.Fprintf(w, "# %s: %s, %s, %s\n", path, plural(in.Size, "byte"), plural(md.NumRows, "row"), plural(len(md.RowGroups), "row group"))
	if md.CreatedBy != "" {
		fmt.Fprintf(w, "# created by: %s\n", md.CreatedBy)
	}
	kv := make(map[string]string, len(md.KeyValueMetadata))
	for _, e := range md.KeyValueMetadata {
		kv[e.Key] = e.Value
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		fmt.Fprintf(w, "# metadata %s = %s\n", k, kv[k])
	}
	_, err = io.WriteString(w, f.Schema().String()+"\n")
	return err
}
