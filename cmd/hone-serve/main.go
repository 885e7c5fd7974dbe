package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/cmd/internal/backend"
	"github.com/hone-rl/hone/cmd/internal/backendflag"
	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/serve"
	"github.com/hone-rl/hone/serve/engine"
	"github.com/hone-rl/hone/train/model"
)

const usage = `hone-serve serves a model folder over an OpenAI-compatible HTTP API,
or fronts a vLLM server for models too big for the embedded engine.

Usage:
  hone-serve --model DIR [flags]
  hone-serve --upstream URL [flags]

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
GET /health, GET /metrics. With --adapters DIR, every DIR/<run>/step-N/ PEFT
adapter named by DIR/<run>/latest is loaded as it appears and served as
"<run>" (newest) and "<run>@<N>"; requests in flight keep their adapter.

Example:
  hone-train init-model -o /tmp/tiny
  hone-serve --model /tmp/tiny --adapters runs/adapters --port 8000 &
  curl -s localhost:8000/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"seed":1}'

With --upstream URL (instead of --model) every /v1 request is forwarded to
the vLLM server at URL, the model "<run>" rewritten to the newest loaded
"<run>@<N>", and each new --adapters step is loaded into vLLM through its
runtime LoRA API (POST /v1/load_lora_adapter; old steps unloaded beyond
--max-adapters). vLLM must be started with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True
and --enable-lora (plus --max-lora-rank >= the adapters' rank and
--max-loras >= (--max-adapters + 1) × runs: a step that requests in flight
still use stays loaded until they end), and must read the adapters folder at
the same absolute path: with --adapters s3://… that is --adapters-cache,
where each published step is pulled (without its optimizer state) before
vLLM is told to load it. The engine's own flags (--dtype, --compute,
--bf16-kernel, --threads, --device, --cuda-attention, --cuda-sync,
--cuda-gemm, --max-batch, --max-queue, --prefill-tokens, --kv-cache-bytes,
prefix caching, --max-tokens, --served-model-name,
--return-tokens-as-token-ids, --request-timeout) are refused
with --upstream: set their vLLM counterparts on vllm serve.

Example with vLLM:
  VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve Qwen/Qwen2.5-7B-Instruct \
    --port 8001 --enable-lora --max-lora-rank 16 --max-loras 4
  hone-serve --upstream http://127.0.0.1:8001 --adapters "$PWD/runs/adapters" --port 8000

Keys: --api-key (or the environment variable HONE_API_KEY, which keeps the
key out of the process list; the flag wins) makes /v1 requests need
"Authorization: Bearer <key>"; /health and /metrics stay open. The default
--host 127.0.0.1 takes connections from this machine only; on any other
address without a key, a warning is logged at start. --upstream-api-key (or
HONE_UPSTREAM_API_KEY) is the key sent to vLLM, with the /v1 requests only.
With --upstream only POST /v1/chat/completions, POST /v1/completions,
GET /v1/models, GET /health and GET /metrics are forwarded, their path
exactly as written here; anything else, vLLM's adapter routes included, is
404 and never reaches vLLM.

Exit codes: 0 drained after SIGINT/SIGTERM, 130 when with --model requests
were still in flight at --drain-timeout (they are failed with 503, and a
warning says how many; a model step stuck in the backend is given up 5s
later, and the process exits all the same), 1 failure, 2 bad usage, an
--adapters bucket that does not exist, or a missing or broken model folder,
one whose chat template does not compile or fails the load-time check (a
small conversation rendered within the template limits) included.

Flags:
`

// The environment variables the keys are read from when their flag is not
// given: a key on the command line is visible to every user of the machine
// (ps, /proc/PID/cmdline).
const (
	apiKeyEnv      = "HONE_API_KEY"
	upstreamKeyEnv = "HONE_UPSTREAM_API_KEY"
)

func main() {
	cli.Main("hone-serve", func(ctx context.Context) error {
		return run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	})
}

// run is hone-serve with its arguments, environment (getenv), stdout (for
// --help) and stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("hone-serve", usage, stdout)
	var opts serve.Options
	var logOpt cli.LogOptions
	var threads int
	var compute, bf16Kernel, device string
	var cudaFlags backendflag.CUDAValues
	opts.AddFlags(fs)
	logOpt.AddFlags(fs)
	fs.IntVar(&threads, "threads", 0, "CPU worker goroutines (0: all cores)")
	fs.StringVar(&compute, "compute", "f32", backendflag.ComputeUsage)
	fs.StringVar(&bf16Kernel, "bf16-kernel", "native", backendflag.BF16KernelUsage)
	backend.AddFlag(fs, &device)
	backendflag.AddCUDAFlags(fs, &cudaFlags)
	var remote remoteAdapters
	remote.addFlags(fs)
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected arguments %q", fs.Args())
	}
	remote.timeoutGiven = fs.Changed("poll-timeout")
	switch {
	case opts.Model == "" && opts.Upstream == "":
		return cli.Usagef("one of --model or --upstream is required")
	case opts.Model != "" && opts.Upstream != "":
		return cli.Usagef("--model and --upstream exclude each other: serve a model folder or front a vLLM server")
	case opts.Upstream == "" && fs.Changed("upstream-api-key"):
		return cli.Usagef("--upstream-api-key needs --upstream")
	case opts.Port < 0 || opts.Port > 65535:
		// Refused before the model loads, which can take minutes, and as
		// bad usage: the listen failing after the load was exit 1.
		return cli.Usagef("--port %d: want 1 to 65535, or 0 for any free port", opts.Port)
	}
	// A negative limit became its default (or, for --kv-cache-bytes, no
	// limit) without a word, where the user had asked for one of their
	// own: bad usage, from serve's own table of limits.
	if l := opts.NegativeLimit(); l != nil {
		return cli.Usagef("%s", l.FlagMessage())
	}
	keysFromEnv(fs, &opts, getenv)
	if opts.Upstream != "" {
		if err := engineOnly(fs); err != nil {
			return err
		}
	}
	if _, err := model.ParseWeightDType(opts.DType); err != nil {
		return cli.Usagef("--%v", err)
	}
	log, err := logOpt.Logger(stderr)
	if err != nil {
		return err
	}
	opts.Log = log
	if opts.Host == "" {
		opts.Host = fs.Lookup("host").DefValue // what serve listens on for an empty host
	}
	warnExposed(log, opts)
	// The steps pulled are those the server keeps (--max-adapters 0 is
	// its default, not every step of the run).
	stopPulling, err := remote.start(ctx, &opts.Adapters, opts.PollInterval, opts.WithDefaults().MaxAdapters, log)
	if err != nil {
		return err
	}
	defer stopPulling()
	var runErr error
	if opts.Upstream == "" { // with --upstream, vLLM runs the model: no local backend
		be, err := backend.Open(device, threads, compute, bf16Kernel, opts.DType, cudaFlags, getenv)
		if err != nil {
			return err
		}
		defer func() { closeBackend(be, runErr, log) }()
		opts.Backend = be
	}
	runErr = serve.Run(ctx, opts)
	if runErr == nil && ctx.Err() != nil {
		return nil // drained after a signal: a clean stop
	}
	return runErr
}

// closeBackend closes be once the server has stopped, unless runErr says
// the engine gave up on a step stuck in it (a wedged device): the CUDA
// backend's Close takes the lock that step holds, so it would hold the
// exit the engine has just given up waiting for. The process's exit frees
// what the backend holds.
func closeBackend(be io.Closer, runErr error, log *slog.Logger) {
	if errors.Is(runErr, engine.ErrStepStuck) {
		log.Warn("backend left open: a step is stuck in it; exiting frees it")
		return
	}
	if err := be.Close(); err != nil { // the CUDA backend names what was not freed
		log.Warn("closing the backend", "err", err)
	}
}

// keysFromEnv fills the keys whose flag was not given from the
// environment. The environment's upstream key is for --upstream only: set
// for a whole shell, it is no error with --model.
func keysFromEnv(fs *pflag.FlagSet, o *serve.Options, getenv func(string) string) {
	if !fs.Changed("api-key") {
		o.APIKey = getenv(apiKeyEnv)
	}
	if !fs.Changed("upstream-api-key") && o.Upstream != "" {
		o.UpstreamAPIKey = getenv(upstreamKeyEnv)
	}
}

// warnExposed logs, at start, that a server listening beyond this machine
// takes requests from anyone when it has no key: with --upstream that is
// also the vLLM server behind it, under vLLM's own key.
func warnExposed(log *slog.Logger, o serve.Options) {
	if o.APIKey != "" || loopback(o.Host) {
		return
	}
	log.Warn("hone-serve is reachable from the network with NO authentication: anyone who can connect may send requests"+
		" (with --upstream, to the vLLM server too); set a key with "+apiKeyEnv+"=… (or --api-key), or listen on --host 127.0.0.1",
		"host", o.Host, "port", o.Port)
}

// loopback reports whether host is this machine only: localhost or a
// loopback address. 0.0.0.0, ::, a LAN address or another name is not.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// engineFlags are the flags that only the embedded engine reads, each with
// what to set on the vLLM server instead: behind --upstream they would do
// nothing, so setting one there is a usage error rather than silently
// ignored.
var engineFlags = []struct{ flag, vllm string }{
	{"dtype", "vLLM takes its own --dtype"},
	{"threads", "vLLM runs the model"},
	{"compute", "vLLM takes its own --dtype"},
	{"bf16-kernel", "vLLM runs the model"},
	{"device", "vLLM runs the model"},
	{"cuda-attention", "vLLM runs the model"},
	{"cuda-sync", "vLLM runs the model"},
	{"cuda-gemm", "vLLM runs the model"},
	{"max-batch", "vLLM's --max-num-seqs"},
	{"prefill-tokens", "vLLM's --max-num-batched-tokens"},
	{"kv-cache-bytes", "vLLM's --gpu-memory-utilization or --kv-cache-memory"},
	{"enable-prefix-caching", "vLLM's own --enable-prefix-caching / --no-enable-prefix-caching"},
	{"no-enable-prefix-caching", "vLLM's own --enable-prefix-caching / --no-enable-prefix-caching"},
	{"max-queue", "vLLM queues the requests the front forwards"},
	{"max-tokens", "vLLM's --max-model-len bounds a request"},
	{"served-model-name", "vLLM's --served-model-name names the base model"},
	{"return-tokens-as-token-ids", "vLLM's own --return-tokens-as-token-ids"},
	{"request-timeout", "the front sets no deadline of its own; the client's timeout applies"},
}

// engineOnly returns a usage error for the first engine-only flag set on
// the command line.
func engineOnly(fs *pflag.FlagSet) error {
	for _, e := range engineFlags {
		if fs.Changed(e.flag) {
			return cli.Usagef("--%s applies to --model, not --upstream (%s)", e.flag, e.vllm)
		}
	}
	return nil
}
