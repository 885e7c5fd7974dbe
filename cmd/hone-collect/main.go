package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/collect/env/stdio"
	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/internal/stageerr"
)

const usage = `hone-collect plays episodes of an environment and writes groups of
trajectories (one group = --group-size attempts at one scenario) as Parquet.

Usage:
  hone-collect [flags] -o OUT.parquet
  hone-collect COMMAND [flags]

Commands:
  proxy       record your own agent's model calls as trajectory groups
  scenarios   have a model write tasks for an MCP server's tools (--scenarios)
Run 'hone-collect COMMAND --help' for a command's flags and example.

Each assistant turn records the sampled token ids and logprobs (the server
is asked for logprobs, vLLM's return_token_ids and, for a server without
it, vLLM's older return_tokens_as_token_ids, whose logprobs tokens name
the ids), the model that answered, the finish reason and the latency. Model calls are retried on
429, 5xx, timeouts and broken connections, except hone-serve's 500s that
no retry can pass (logits_not_finite: the model's logits were NaN, as
from a diverged adapter; constraint_no_token); an episode that still
fails is a row with its error set, the server's message included.

Examples:
  hone-collect --env guess --groups 16 -G 8 --model myrun \
      --base-url http://localhost:8000/v1 --temperature 1 -o runs/r1/step-0.parquet
  hone-collect --env guess --env-opt n=64 --env-opt turns=6 --groups 500 -G 1 \
      --policy scripted:mix -o sft.parquet          # no model: SFT data
  hone-collect --scenarios tasks.jsonl -G 4 --model qwen3 -o out.parquet

Scenario files are JSON lines {"id", "environment", "payload", "split"} or a
trajectory Parquet file (its scenarios are replayed). --split val plays only
a file's val scenarios, or labels generated ones val (an eval set for
hone-inspect log-eval; give it a --seed of its own).

Exit codes: 0 ok; 1 failure: every episode failed, or more than
--max-failures did (by default the run never stops early, but when every
episode of the first group failed to connect to the model server, the
connection refused, none succeeded and no model call was answered: it
stops then and writes nothing), or a model
call was answered 404 before any was answered (a --model the server does
not serve, or a --base-url without the endpoint: the run stops at that
first answer, writes nothing, and names the models the server lists; a
404 after the model answered fails its episode only), or a model call was
answered 400 before any was answered for a --max-tokens over the server's
cap, or one that fills the model's context alone (every call asks for as
many: the run stops there, writes nothing, and names the flag and the
cap; a refusal that depends on the prompt fails its episode only), or the environment failed
as it started (a program that crashed, a server out of reach); 2 bad usage or input (an --env-opt the environment refuses, a
command or path that is not there); 130 interrupted. After failed episodes or an interrupt, the finished
groups are still written, failed episodes as rows with their error; an
interrupt or a --max-failures stop before any group finished writes
nothing.

Unlike ART, whose gather aborts on the first exception, a run is not
stopped by one failed episode: it is written with its error, counted in the
summary, never trained (hone-train counts it as "errors") and counted as
exception_rate by hone-inspect log-eval, so an unattended round loses only
that episode. --max-failures 0 restores ART's behaviour (docs/art.md).

Flags:
`

func main() {
	cli.Main("hone-collect", func(ctx context.Context) error {
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	})
}

// The environment variables an OpenAI client reads, read here for the
// endpoint and key a flag left empty: the collect packages read no
// environment.
const (
	baseURLEnv = "OPENAI_BASE_URL"
	apiKeyEnv  = "OPENAI_API_KEY"
)

// modelFromEnv fills the endpoint and key that no flag gave.
func modelFromEnv(m *collect.ModelOptions) {
	if m.BaseURL == "" {
		m.BaseURL = os.Getenv(baseURLEnv)
	}
	if m.APIKey == "" {
		m.APIKey = os.Getenv(apiKeyEnv)
	}
}

// unquotedEnvOpt explains stray arguments that directly follow an
// --env-opt value: the shell split a value with spaces (cmd=python3 env.py,
// the quotes of cmd='python3 env.py' left out), and the words after the
// first are not scenario files. "" when the stray words follow anything else.
func unquotedEnvOpt(args, stray []string) string {
	for i, a := range args {
		val, next := "", 0
		switch {
		case a == "--":
			return ""
		case a == "--env-opt" && i+2 < len(args):
			val, next = args[i+1], i+2
		case strings.HasPrefix(a, "--env-opt=") && i+1 < len(args):
			val, next = strings.TrimPrefix(a, "--env-opt="), i+1
		default:
			continue
		}
		n := 0
		for n < len(stray) && next+n < len(args) && args[next+n] == stray[n] {
			n++
		}
		key, first, ok := strings.Cut(val, "=")
		if n == 0 || !ok {
			continue
		}
		return fmt.Sprintf("--env-opt %q took one word; quote a value with spaces whole: --env-opt %s='%s %s'",
			val, key, first, strings.Join(stray[:n], " "))
	}
	return ""
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// A usage error inside a command points to that command's --help.
	if len(args) > 0 && args[0] == "proxy" {
		return cli.ForCommand("hone-collect proxy", runProxy(ctx, args[1:], stdout, stderr))
	}
	if len(args) > 0 && args[0] == "scenarios" {
		return cli.ForCommand("hone-collect scenarios", runScenarios(ctx, args[1:], stdout, stderr))
	}
	fs := cli.NewFlagSet("hone-collect", usage, stdout)
	var opts collect.Options
	var sf cli.StageFlags
	opts.AddFlags(fs)
	sf.AddFlags(fs, "output Parquet file (default: stdout when it is not a terminal)")
	help, sh, err := sf.Parse(fs, args)
	if help || err != nil {
		return err
	}
	opts.Shard = sh
	if fs.NArg() > 0 {
		if hint := unquotedEnvOpt(args, fs.Args()); hint != "" {
			return cli.Usagef("unexpected arguments %q: %s", fs.Args(), hint)
		}
		return cli.Usagef("unexpected arguments %q (scenario files go to --scenarios)", fs.Args())
	}
	modelFromEnv(&opts.Model)
	// The progress line (groups done of the total, tokens, rates, ETA) is
	// cli.Progress's, on a terminal only; the log goes through it so that
	// no log line is written over the line. collect reports cumulative
	// Stats, one call at a time; the line counts what each call adds.
	p := cli.NewProgress(stderr, "groups", 0)
	log, err := sf.Log.Logger(p.Writer())
	if err != nil {
		return err
	}
	if _, err := cli.ChooseOutput(sf.Output, cli.IsTerminal(stdout), true); err != nil {
		return err
	}
	// The scenarios are read whole before -o is written, but -o then
	// replaces them: a JSON Lines file by Parquet trajectories (those of a
	// run stopped early, or of one --shard, alone), an earlier round's
	// Parquet by this round's rollouts.
	if opts.Scenarios != "" && fileset.SameFile(ctx, sf.Output, opts.Scenarios) {
		return cli.Usagef("-o %s names the --scenarios file: the trajectories would replace the scenarios; write them to another file", fileset.RedactURL(sf.Output))
	}
	warnOutputName(log, sf.Output)
	if w := flagval.CredentialsNotSent("--base-url (or $OPENAI_BASE_URL)", opts.Model.BaseURL, "--api-key or $OPENAI_API_KEY"); w != "" {
		log.Warn(w)
	}
	var last collect.Stats
	opts.Log = log
	opts.Progress = func(s collect.Stats) {
		p.SetTotal(int64(s.Total))
		p.Add(int64(s.Groups-last.Groups), s.Tokens-last.Tokens)
		last = s
	}
	var final collect.Stats
	opts.Summary = func(st collect.Stats) {
		final = st
		p.Stop() // the summary goes below the finished progress line
	}
	p.Start(ctx)
	defer p.Stop()
	var runErr error
	err = cli.WriteOutput(ctx, sf.Output, stdout, true, func(w io.Writer) error {
		opts.Out = w
		runErr = collect.Run(ctx, opts)
		started := final.Total > 0 // the scenarios were loaded: Run wrote a whole file
		// A run refused for bad usage once its scenarios were loaded (an
		// unknown scripted policy), or stopped at a model that is not
		// served, a dead server or a --max-tokens over the server's cap,
		// writes nothing: a summary of its groups above the error
		// would read as a run that was played and stopped.
		if started && !errors.Is(runErr, stageerr.ErrUsage) && !errors.Is(runErr, collect.ErrModelNotFound) &&
			!errors.Is(runErr, collect.ErrUnreachable) && !errors.Is(runErr, collect.ErrMaxTokensOverCap) {
			fmt.Fprintln(stderr, "hone-collect: "+final.String())
		}
		interrupted := errors.Is(runErr, stageerr.ErrInterrupted) && started
		if (interrupted || errors.Is(runErr, collect.ErrTooManyFailures)) && final.Groups == 0 {
			// A file of no rows would replace the previous output (a
			// round's file, an object) with nothing, as if a run of
			// nothing had been played.
			stop := "the stop"
			if interrupted {
				stop = "the interrupt"
			}
			fmt.Fprintln(stderr, "hone-collect: no group finished before "+stop+": "+nothingWritten(sf.Output))
			return runErr
		}
		if interrupted || errors.Is(runErr, collect.ErrTooManyFailures) || errors.Is(runErr, collect.ErrAllFailed) {
			return nil // keep the whole groups finished, failed episodes as rows with their error
		}
		// Stopped before the first episode, at a model that is not
		// served (ErrModelNotFound), at a server that refused every
		// connection (ErrUnreachable) or at one that refused the first
		// call's --max-tokens for good (ErrMaxTokensOverCap): nothing worth keeping was played;
		// nothing is written, and an existing output stays as it was.
		return runErr
	})
	if err == nil {
		err = runErr
	}
	return err
}

// warnOutputName warns of an -o name whose extension is not .parquet
// (out.jsonl, out.json): the output is Parquet whatever its name, and the
// stages that read a folder take only its *.parquet files. Warned, not
// refused: no stage refuses an output by its name, and a name without an
// extension (a FIFO, /dev/stdout) or a shard's DIR/ is no mistake.
func warnOutputName(log *slog.Logger, out string) {
	ext := path.Ext(path.Base(filepath.ToSlash(fileset.DisplayName(out))))
	if out == "" || strings.HasSuffix(out, "/") || ext == "" || ext == ".parquet" {
		return
	}
	log.Warn(fmt.Sprintf("-o %s: hone-collect writes Parquet whatever the name; the stages reading a folder take only its *.parquet files: name it .parquet (hone-inspect to-jsonl converts to JSON lines)", fileset.DisplayName(out)))
}

// nothingWritten says that the output out (-o; "" or "-": stdout) was
// not written, and an existing file or object not touched.
func nothingWritten(out string) string {
	if out == "" || out == cli.Stdin {
		return "nothing was written to stdout"
	}
	// An object's URL without its query (endpoint, region), as every
	// other message names it.
	return "nothing was written; an existing " + fileset.DisplayName(out) + " is left as it was"
}

const proxyUsage = `hone-collect proxy records the conversations of your own agent: point its
OpenAI base URL at the proxy and send the headers X-Hone-Trajectory (and
X-Hone-Group) with each request. Requests go upstream asking for logprobs
and token ids; responses come back unchanged. Streamed requests
("stream": true) are relayed event by event as they arrive and recorded
as the same turn a non-streamed request would give; a stream that breaks
off (agent gone, upstream cut or garbled) leaves the trajectory with its
error. Streamed requests with n > 1 are refused (400).

  POST /hone/trajectories/{id}/reward  {"reward": 1, "metrics": {...}}  closes a trajectory
  POST /hone/groups/{id}/close                                          flushes a group
       optional body {"metadata": {...}, "metrics": {...}}: the group's own fields

Each flushed group is written as a Parquet file into --output-dir.

Example:
  hone-collect proxy --upstream http://localhost:8000/v1 -o runs/r1/proxy --group-size 4
  OPENAI_BASE_URL=http://127.0.0.1:8100/v1 python my_agent.py

Flags:
`

func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("hone-collect proxy", proxyUsage, stdout)
	var opts proxy.Options
	var logOpt cli.LogOptions
	opts.AddFlags(fs)
	logOpt.AddFlags(fs)
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	if opts.Upstream == "" {
		opts.Upstream = os.Getenv(baseURLEnv)
		opts.UpstreamFrom = "$" + baseURLEnv + ", the default of --upstream; your agent's variable names the proxy, not the server"
	}
	if opts.Upstream == "" || opts.OutDir == "" {
		return cli.Usagef("proxy needs --upstream (or $OPENAI_BASE_URL) and --output-dir")
	}
	log, err := logOpt.Logger(stderr)
	if err != nil {
		return err
	}
	opts.Log = log
	return proxy.Run(ctx, opts)
}

const scenariosUsage = `hone-collect scenarios asks a model to write exactly -n varied tasks for an
MCP server, as ART's generate_scenarios does, and prints them as a
scenario file (JSON lines) for hone-collect --scenarios.

The prompt shows the server's tools and resources as JSON and asks for
each task a difficulty from 1 to 5 and, unless --no-summary, that it end by
asking for a summary of the work and a report of the results; the reply
must follow a JSON schema with exactly the number of tasks asked for.
Tasks without a difficulty from 1 to 5, without the summary request, or
repeated are dropped, and the model is asked again for the tasks still
missing (shown those it already wrote), up to --calls calls; fewer than -n
valid tasks after the last is an error. Each task's payload is {"task",
"answer", "difficulty"}. A summary line on stderr gives the calls, the
difficulty histogram and the tasks dropped, by reason.

Example:
  hone-collect scenarios --mcp-url http://localhost:3000/mcp -n 50 --model gpt-4.1 \
      --val-fraction 0.1 -o tasks.jsonl
  hone-collect --scenarios tasks.jsonl --env-opt url=http://localhost:3000/mcp -G 4 \
      --model myrun --base-url http://localhost:8000/v1 -o runs/r1/step-0.parquet

Flags:
`

func runScenarios(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("hone-collect scenarios", scenariosUsage, stdout)
	var o collect.TaskGenOptions
	var mcpCmd, mcpURL, output string
	fs.StringVar(&mcpCmd, "mcp-cmd", "", "MCP server to start, speaking stdio, e.g. 'npx -y @modelcontextprotocol/server-everything'")
	fs.StringVar(&mcpURL, "mcp-url", "", "MCP server's streamable HTTP URL")
	fs.IntVarP(&o.N, "n", "n", 20, "tasks to generate, exactly")
	fs.IntVar(&o.Calls, "calls", 5, "model calls at most to get -n valid tasks")
	fs.BoolVar(&o.NoSummary, "no-summary", false, "do not require each task to end by asking for a summary and report")
	fs.Int64Var(&o.Seed, "seed", 1, "request seed of the first call (the next calls add 1 each) and id prefix")
	fs.Float64Var(&o.ValFraction, "val-fraction", 0, "share of the tasks marked split val")
	fs.StringVar(&o.Hint, "hint", "", "extra guidance for the task writer")
	fs.StringVar(&o.Model.Model, "model", "", "model that writes the tasks (required)")
	fs.StringVar(&o.Model.BaseURL, "base-url", "", "OpenAI-compatible base URL (default $OPENAI_BASE_URL)")
	fs.StringVar(&o.Model.APIKey, "api-key", "", "API key (default $OPENAI_API_KEY)")
	fs.IntVar(&o.Model.MaxTokens, "max-tokens", 8000, "completion tokens per call (ART's value)")
	fs.IntVar(&o.Model.Retries, "retries", 4, "retries on 429, 5xx and timeouts")
	var kwargs string
	fs.StringVar(&kwargs, "chat-template-kwargs", "", `chat template kwargs sent as chat_template_kwargs on every call, a JSON object, e.g. '{"enable_thinking":false}' for a Qwen3 writer that should not spend --max-tokens thinking`)
	fs.StringVarP(&output, "output", "o", "", "output JSON lines file (default stdout)")
	// The bound --env mcp has: a server that never answers initialize or
	// its listings fails instead of hanging the command.
	var startTimeout time.Duration
	flagval.PositiveDuration(fs, &startTimeout, "start-timeout", collect.DefaultStartTimeout, "wall time for the MCP server to start and list its tools and resources")
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	if o.Model.Model == "" || (mcpCmd == "") == (mcpURL == "") {
		return cli.Usagef("scenarios needs --model and one of --mcp-cmd or --mcp-url")
	}
	if o.N <= 0 || o.Calls <= 0 || o.Model.MaxTokens <= 0 {
		return cli.Usagef("-n, --calls and --max-tokens must be positive")
	}
	if kwargs != "" {
		kw, _, err := trajectory.CanonicalChatTemplateKwargs(kwargs)
		if err != nil {
			return cli.Usagef("--chat-template-kwargs %w", err)
		}
		o.Model.TemplateKwargs = kw
	}
	modelFromEnv(&o.Model)
	// Checked before the MCP server starts, as collect.Run checks it
	// before any episode.
	if o.Model.BaseURL != "" {
		if err := flagval.BaseURL("--base-url (or $OPENAI_BASE_URL)", o.Model.BaseURL); err != nil {
			return cli.Usage(err)
		}
	}
	if w := flagval.CredentialsNotSent("--base-url (or $OPENAI_BASE_URL)", o.Model.BaseURL, "--api-key or $OPENAI_API_KEY"); w != "" {
		fmt.Fprintf(stderr, "hone-collect: warning: %s\n", w)
	}
	argv, err := stdio.Split(mcpCmd)
	if err != nil {
		return cli.Usagef("--mcp-cmd: %w", err)
	}
	err = collect.StartWithin(ctx, startTimeout, func(ctx context.Context) error {
		m, err := mcpenv.Open(ctx, mcpenv.Options{Command: argv, URL: mcpURL})
		if err != nil {
			return err
		}
		defer m.Close()
		o.Tools = m.Tools()
		o.Resources, err = m.Resources(ctx)
		return err
	})
	if err != nil {
		return err
	}
	scs, st, err := collect.GenerateTasks(ctx, o)
	if err != nil {
		return err
	}
	err = cli.WriteOutput(ctx, output, stdout, false, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, sc := range scs {
			if err := enc.Encode(sc); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		fmt.Fprintf(stderr, "hone-collect: %d tasks for %d tools and %d resources; %s\n", len(scs), len(o.Tools), len(o.Resources), st)
	}
	return err
}
