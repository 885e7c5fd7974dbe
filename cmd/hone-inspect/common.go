package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/trajectory"
)

// inputReader reads an input set; Close closes the reader and the set
// (removing the copy of stdin).
type inputReader struct {
	*trajectory.Reader
	set *fileset.Set
}

func (r *inputReader) Close() error {
	r.Reader.Close()
	return r.set.Close()
}

// openInputs resolves the input arguments (files, globs, directories of
// *.parquet, "-") and opens them as one trajectory input set, which checks
// every footer first.
func (a *app) openInputs(ctx context.Context, args []string) (*inputReader, error) {
	set, err := cli.ResolveInputs(ctx, args, fileset.Options{Stdin: a.stdin})
	if err != nil {
		return nil, err
	}
	r, err := trajectory.Open(ctx, set)
	if err != nil {
		set.Close()
		return nil, classify(err)
	}
	for _, f := range r.Files() {
		a.log.Debug("input", "file", f.Path, "bytes", f.Size, "rows", f.Rows, "row_groups", f.RowGroups, "schema_version", f.SchemaVersion)
	}
	return &inputReader{Reader: r, set: set}, nil
}

// classify marks an error from the format package for the exit code: the
// package types every bad-input error (a bad file, row, group or JSONL
// line, a missing input) as *trajectory.InputError; anything else (a disk
// that fails, a permission refused) is a failure of the run. A missing
// file named by the cli layer counts as bad input too.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var ie *trajectory.InputError
	if errors.As(err, &ie) || errors.Is(err, fs.ErrNotExist) {
		return cli.BadInput(err)
	}
	return err
}

// Parts of a model folder to load.
const (
	withTokenizer = modelfolder.Tokenizer
	withTemplate  = modelfolder.Template
)

// loadModel reads the parts of a model folder a command needs (the
// tokenizer takes most of a second to load); with both, the folder's stop
// ids come too, so `render --ids` ends turns where train does. A folder
// that is missing or does not hold what is needed is bad input; an
// operating-system failure is not.
func loadModel(dir string, parts modelfolder.Part) (*layout.Model, error) {
	if dir == "" {
		return nil, cli.Usagef("--model DIR is required")
	}
	f, err := modelfolder.Open(dir, parts)
	if err == nil {
		return layout.FromFolder(f), nil
	}
	var errno syscall.Errno
	var perr *fs.PathError
	if (errors.As(err, &errno) || errors.As(err, &perr)) && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return nil, cli.BadInput(err)
}

// progress starts the progress line of a command that reads the input
// set, and moves the log onto it, so that a log line is never written over
// the line.
func (a *app) progress(ctx context.Context, label string, total int64) (*cli.Progress, error) {
	p := cli.NewProgress(a.stderr, label, total)
	log, err := a.logOpt.Logger(p.Writer())
	if err != nil {
		return nil, err
	}
	a.log = log
	p.Start(ctx)
	return p, nil
}

// groupPass reads the groups of an input set in order, its progress line
// counting their trajectories and tokens.
type groupPass struct {
	in *inputReader
	*cli.Progress
}

// warnRepeated names on stderr each input set names again. Read twice,
// cat's output would repeat every trajectory id and the others' counts
// would double; read once, say so rather than drop the copy without a
// word. An object is named without its query, as other messages name
// it: the query may hold the endpoint's password.
func (a *app) warnRepeated(cmd string, set *fileset.Set) {
	for _, n := range set.Repeated() {
		a.summary(cmd, "%s: named again, read once", fileset.DisplayName(n))
	}
}

// startPass opens the inputs args name (openInputs) and starts the
// progress line over their trajectories (progress); Close ends both.
func (a *app) startPass(ctx context.Context, cmd string, args []string) (*groupPass, error) {
	in, err := a.openInputs(ctx, args)
	if err != nil {
		return nil, err
	}
	a.warnRepeated(cmd, in.set)
	p, err := a.progress(ctx, "trajectories", totalRows(in.Reader))
	if err != nil {
		in.Close()
		return nil, err
	}
	return &groupPass{in: in, Progress: p}, nil
}

// each calls visit on every group in input order, counting each on the
// progress line once visit returns, and stops at visit's first error; a
// read error is classified. It returns the number of groups visited.
func (g *groupPass) each(ctx context.Context, visit func(trajectory.Group) error) (int64, error) {
	var groups int64
	for {
		grp, err := g.in.Next(ctx)
		if err == io.EOF {
			return groups, nil
		}
		if err != nil {
			return groups, classify(err)
		}
		if err := visit(grp); err != nil {
			return groups, err
		}
		groups++
		g.Add(int64(len(grp.Trajectories)), groupTokens(grp))
	}
}

// files are the input files, as the footers described them.
func (g *groupPass) files() []trajectory.FileInfo { return g.in.Files() }

// Close stops the progress line and closes the inputs.
func (g *groupPass) Close() {
	g.Stop()
	g.in.Close()
}

// totalRows is the number of trajectories in the input set, from the
// footers, for the progress line.
func totalRows(r *trajectory.Reader) int64 {
	var n int64
	for _, f := range r.Files() {
		n += f.Rows
	}
	return n
}

// groupTokens counts the sampled token ids recorded in a group, in every
// history of its trajectories.
func groupTokens(g trajectory.Group) int64 {
	var n int64
	for i := range g.Trajectories {
		n += trajectory.TrajectoryTokens(&g.Trajectories[i])
	}
	return n
}

// summary prints the one-line end-of-run summary on stderr.
// plural counts n things: "1 file", "2 files".
func plural[N int | int64](n N, thing string) string {
	return pluralOf(n, thing, thing+"s")
}

// pluralOf is plural for a noun whose plural is not the singular plus "s".
func pluralOf[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (a *app) summary(cmd string, format string, args ...any) {
	fmt.Fprintf(a.stderr, "hone-inspect %s: %s\n", cmd, fmt.Sprintf(format, args...))
}
