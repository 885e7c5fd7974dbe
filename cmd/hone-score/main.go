package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/score"
	"github.com/spf13/pflag"
)

const usage = `hone-score fills in trajectory rewards and writes a scored trajectory file.

Usage:
  hone-score [flags] INPUT... (files, globs, directories of *.parquet, or -)

Scorers are applied in order (--scorer, repeatable); each writes a named reward
component and the last one's value becomes the reward. A formula reads the
components of the scorers before it (and env), never one written after it:
  env                 keep the environment's reward (component "env")
  formula:EXPR        an expression over metrics and components, e.g. 'win - 0.1*illegal'
                      (metrics["n"], components["n"] for any name; reward, the
                      reward so far; metadata["k"]; group_metrics["n"] and
                      group_metadata["k"], the group's own; a missing name
                      fails the row unless guarded: metrics["n"] ?? 0; a
                      missing metadata or group_metadata key is nil)
  ruler               one LLM-judge call per group, relative scores in [0,1]
                      (a group of one is scored on an absolute scale; see docs/ruler.md)
  NAME=formula:EXPR   the same under component NAME (NAME=ruler too; not env,
                      previous or reward: a formula's reward is the reward so far)
The reward a row had before is kept as component "env" (first scoring) or
"previous" (re-scoring); components an earlier chain wrote that this one does
not are kept as they were, and a formula may read them (a ruler component
blended anew without a judge call). Rows whose episode failed (error set) are not
scored: they pass through unscored and the summary counts them.

Examples:
  hone-score -o scored.parquet --scorer env --scorer 'formula:win - 0.1*illegal' runs/r1/
  OPENAI_API_KEY=... hone-score -o scored.parquet --judge-model o4-mini \
      --scorer ruler --scorer 'final=formula:0.8*ruler + 0.2*env' 'runs/r1/*.parquet'
  hone-collect ... | hone-score --judge-model qwen3 --judge-base-url http://localhost:8000/v1 \
      --scorer ruler --on-judge-error skip - > scored.parquet

Exit codes: 0 ok, 1 failure (judge failure with --on-judge-error fail; with
skip or mark, a judge that failed every group: the output is still written;
under any policy, a judge answering 401, 403 or 404, or a web page or other
JSON rather than a chat completion, before it answered any call: nothing is
written),
2 bad usage or bad input, 130 interrupted (groups finished before the stop
are kept). Where -o names an input (re-scoring in place; an object counts as
named whatever its URL's query says but for another endpoint), an interrupted run
or a judge that failed every group leaves that file as it was (the summary
counting 0 rows written), and --on-judge-error skip with a ruler scorer, or
--shard i/n, is refused (exit 2: the groups they leave out would be lost;
use mark, or another -o).

Flags:
`

func main() {
	cli.Main("hone-score", func(ctx context.Context) error {
		return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	})
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("hone-score", usage, stdout)
	var opts score.Options
	var sf cli.StageFlags
	opts.AddFlags(fs)
	sf.AddFlags(fs, "output file (default: stdout when it is not a terminal)")
	help, sh, err := sf.Parse(fs, args)
	if help || err != nil {
		return err
	}
	opts.Shard = sh
	judgeFromEnv(&opts)
	// The log goes through the progress line (drawn on a terminal only),
	// so that no log line is written over it.
	p := cli.NewProgress(stderr, "groups", 0)
	log, err := sf.Log.Logger(p.Writer())
	if err != nil {
		return err
	}
	if err := opts.CheckFlags(); err != nil {
		return err
	}
	// Refuse Parquet to a terminal before stdin is read or any judge call
	// is paid for.
	if _, err := cli.ChooseOutput(sf.Output, cli.IsTerminal(stdout), true); err != nil {
		return err
	}
	inputs, err := cli.ResolveInputs(ctx, fs.Args(), fileset.Options{Stdin: stdin})
	if err != nil {
		return err
	}
	defer inputs.Close()
	inPlace := namesAnInput(ctx, sf.Output, inputs)
	// -o as messages show it: an object-store URL's endpoint password
	// masked, as every other message masks it (stderr ends up in pod logs).
	shownOut := fileset.RedactURL(sf.Output)
	if inPlace && !sh.Whole() {
		return cli.Usage(fmt.Errorf("--shard %s writes only its part of the groups, and -o %s names an input, which that part would replace: write the part elsewhere (-o DIR/ names it for you)", sh, shownOut))
	}
	if inPlace && opts.OnJudgeError == score.PolicySkip && judges(opts.Scorers) {
		// skip leaves a failed group out of the output, and in place
		// the output replaces the input: the group would be gone for
		// good. Said before any judge call is paid for.
		return cli.Usage(fmt.Errorf("--on-judge-error skip leaves the groups the judge fails out of the output, and -o %s names an input, which the output replaces: they would be lost; use --on-judge-error mark (they are kept, unscored, the reason in each row's error) or write elsewhere", shownOut))
	}
	// Warned once the command's usage is checked: a warning before a
	// usage error drew the eye from what to fix.
	if unread := judgeFlagsUnread(fs, opts.Scorers); len(unread) > 0 {
		log.Warn(strings.Join(unread, ", ") + " do nothing without a ruler scorer (--scorer ruler, or NAME=ruler): no judge is called, and the chain scores without one")
	}
	p.Start(ctx)
	defer p.Stop()
	var last int64
	opts.Inputs, opts.Log = inputs, log
	opts.Progress = func(groups, rows int64) { p.Add(groups-last, 0); last = groups }

	var sum score.Summary
	opts.Summary = func(s score.Summary) { sum = s }

	var runErr error
	err = cli.WriteOutput(ctx, sf.Output, stdout, true, func(w io.Writer) error {
		opts.Out = w
		runErr = score.Run(ctx, opts)
		p.Stop()
		kept := errors.Is(runErr, stageerr.ErrInterrupted) || errors.Is(runErr, score.ErrJudgeFailedAll)
		if kept && inPlace {
			// The output is discarded below: the summary counts the
			// rows that reach a file, and none do.
			sum.Written, sum.ErroredRows = 0, 0
		}
		if runErr == nil || kept {
			fmt.Fprintln(stderr, "hone-score: "+sum.String())
			log.Debug("hone-score summary", "groups", sum.Groups, "rows", sum.Rows, "scored", sum.Scored,
				"passed", sum.Passed, "skipped", sum.Skipped, "marked", sum.Marked, "errored", sum.Errored,
				"written", sum.Written, "errored_rows", sum.ErroredRows)
		}
		if kept && inPlace {
			// What was written holds only part of the input's groups,
			// and it would replace the whole input: the rest were lost.
			fmt.Fprintf(stderr, "hone-score: %s left as it was: -o names an input, and this run's output, which lacks groups it did not score, would have replaced all of it\n", shownOut)
			return runErr
		}
		if kept {
			return nil // keep the whole groups finished before the stop, or what a failing judge left
		}
		return runErr
	})
	if err == nil {
		err = runErr
	}
	return err
}

// namesAnInput reports whether the output is one of the inputs, however
// either is spelled (fileset.SameFile): re-scoring in place.
func namesAnInput(ctx context.Context, out string, in *fileset.Set) bool {
	if out == "" || out == "-" {
		return false
	}
	for _, name := range in.Names() {
		if fileset.SameFile(ctx, out, name) {
			return true
		}
	}
	return false
}

// judges reports whether a --scorer is ruler (the only scorer that calls
// the judge); a spec that does not parse is left to score.Run to refuse.
func judges(scorers []string) bool {
	for _, v := range scorers {
		if s, err := score.ParseSpec(v); err == nil && s.Kind == "ruler" {
			return true
		}
	}
	return false
}

// judgeFlagsUnread returns the judge's flags given on fs (as --NAME)
// when no scorer calls the judge: they are read by the ruler scorer
// alone, and a chain without one drops them. Warned, not refused, as
// hone-train warns of the flags a call does not read: a script may pass
// them on every call, and the run scores as it would without. The
// judge's environment ($OPENAI_API_KEY) is not a flag given for this run.
func judgeFlagsUnread(fs *pflag.FlagSet, scorers []string) []string {
	if judges(scorers) {
		return nil
	}
	for _, v := range scorers {
		if _, err := score.ParseSpec(v); err != nil {
			return nil // refused by score.Run: a warning would only add to it
		}
	}
	var given []string
	fs.Visit(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "judge-") || f.Name == "rubric" || f.Name == "no-judge-cache" || f.Name == "on-judge-error" {
			given = append(given, "--"+f.Name)
		}
	})
	return given
}

// judgeFromEnv fills the judge's endpoint and key that no flag gave from
// the variables an OpenAI client reads: the score packages read no
// environment.
func judgeFromEnv(o *score.Options) {
	if o.JudgeBaseURL == "" {
		o.JudgeBaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if o.JudgeAPIKey == "" {
		o.JudgeAPIKey = os.Getenv("OPENAI_API_KEY")
	}
}
