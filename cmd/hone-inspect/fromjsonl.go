package main

import (
	"context"
	"fmt"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type fromJSONLOptions struct {
	Output string
}

func (o *fromJSONLOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "", "write Parquet to this file (atomically) instead of stdout")
}

func newFromJSONLCmd(a *app) *cobra.Command {
	var opts fromJSONLOptions
	cmd := &cobra.Command{
		Use:   "from-jsonl [flags] FILE|GLOB|DIR|-...",
		Short: "Import JSON Lines chats as a trajectory file",
		Long: `from-jsonl reads JSON Lines in the OpenAI chat shape, one trajectory per
line ({"messages": [...], "tools": [...]}, or ART's "messages_and_choices"),
with any of Hone's fields, and writes one Parquet trajectory file. An
OpenAI fine-tuning file's "weight" (0 or 1) on a message is read as
"trainable" (false or true). As in
ART's files, a metadata value may be any JSON value (one that is not a
string is kept as its JSON text) and a metric true or false (1 or 0); a
null metric is left out of the row, as hone-collect leaves it out, with
one warning per file naming its first such line. A
directory means its *.jsonl files. Lines without a trajectory_id get one
derived from the line (the same file gives the same ids), lines without a
group_id become groups of one; the summary says how many ids were made.
A group's lines must sit in one file, and ids be unique across the files:
a group or trajectory id that an earlier file gave is refused (exit 2),
naming both files.`,
		Example: `  hone-inspect from-jsonl -o imported.parquet chats.jsonl
  cat chats.jsonl | hone-inspect from-jsonl - | hone-inspect stats -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFromJSONL(cmd.Context(), a, opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runFromJSONL(ctx context.Context, a *app, opts fromJSONLOptions, args []string) error {
	// Refuse a terminal before reading anything.
	if _, err := cli.ChooseOutput(opts.Output, cli.IsTerminal(a.stdout), true); err != nil {
		return err
	}
	set, err := cli.ResolveInputs(ctx, args, fileset.Options{Ext: ".jsonl", Stdin: a.stdin, Sequential: true})
	if err != nil {
		return err
	}
	defer set.Close()
	a.warnRepeated("from-jsonl", set)
	out, err := cli.OpenOutput(ctx, opts.Output, a.stdout, true)
	if err != nil {
		return err
	}
	defer out.Close()
	var total trajectory.ImportResult
	w := trajectory.NewWriter(out, trajectory.WriterOptions{})
	seen := importedIDs{groups: map[string]string{}, trajectories: map[string]string{}}
	for i := range set.Len() {
		res, err := importOne(ctx, w, set, i, seen)
		if err != nil {
			return err
		}
		if msg := res.NullMetricsWarning(set.Name(i)); msg != "" {
			a.log.Warn(msg)
		}
		total.Lines += res.Lines
		total.Groups += res.Groups
		total.GeneratedIDs += res.GeneratedIDs
		total.GeneratedGroupIDs += res.GeneratedGroupIDs
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := out.Commit(); err != nil {
		return err
	}
	a.summary("from-jsonl", "%s → %s, %s; generated %s and %s",
		plural(total.Lines, "line"), plural(total.Groups, "group"), pluralOf(w.Rows(), "trajectory", "trajectories"),
		plural(total.GeneratedIDs, "trajectory id"), plural(total.GeneratedGroupIDs, "group id"))
	return nil
}

// importedIDs are the group and trajectory ids of the files imported so
// far, each with the file it came from.
type importedIDs struct {
	groups, trajectories map[string]string
}

// check refuses a group of file path whose id, or one of whose trajectory
// ids, an earlier file gave: the Writer would refuse it too, but as its
// caller's mistake (exit 1) and without naming the file that had it first.
// ImportJSONL checks the lines of one file.
func (s importedIDs) check(path string, g trajectory.Group) error {
	const made = "(an id starting t- or g- may be one from-jsonl made for a line without one, from the line's number and text: then both files hold that line at that place)"
	if first, ok := s.groups[g.ID]; ok {
		return &trajectory.InputError{File: path, Row: -1, Group: g.ID, Field: "group_id",
			Err: fmt.Errorf("%s: group_id %q is also in %s: a group's lines must be in one input %s", path, g.ID, first, made)}
	}
	for _, t := range g.Trajectories {
		if first, ok := s.trajectories[t.ID]; ok {
			return &trajectory.InputError{File: path, Row: -1, Group: g.ID, Field: "trajectory_id",
				Err: fmt.Errorf("%s: trajectory_id %q (group %q) is also in %s: ids must be unique across the inputs %s", path, t.ID, g.ID, first, made)}
		}
	}
	s.groups[g.ID] = path
	for _, t := range g.Trajectories {
		s.trajectories[t.ID] = path
	}
	return nil
}

func importOne(ctx context.Context, w *trajectory.Writer, set *fileset.Set, i int, seen importedIDs) (trajectory.ImportResult, error) {
	path := set.Name(i)
	r := set.Stdin() // "-" is read as it comes
	if path != fileset.Stdin {
		in, err := set.Open(ctx, i)
		if err != nil {
			return trajectory.ImportResult{}, classify(err)
		}
		defer in.Close()
		r = in.Reader()
	}
	groups, res, err := trajectory.ImportJSONL(ctx, r, path)
	if err != nil {
		return res, classify(err)
	}
	for _, g := range groups {
		if err := seen.check(path, g); err != nil {
			return res, classify(err)
		}
		if err := w.WriteGroup(ctx, g); err != nil {
			return res, classify(fmt.Errorf("%s: %w", path, err))
		}
	}
	return res, nil
}
