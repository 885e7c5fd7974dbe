package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/serve/internal/httpserver"
	"github.com/hone-rl/hone/serve/vllm"
)

// Options configure hone-serve. A limit at 0 is its flag's default
// unless its comment says otherwise (WithDefaults); a negative limit is
// NewServer's and Run's error, naming it.
type Options struct {
	Model           string // model folder (config.json, safetensors, tokenizer, chat template)
	Upstream        string // vLLM's base URL: forward to it instead of loading Model (serve/vllm)
	UpstreamAPIKey  string // bearer token vLLM expects (its --api-key)
	Adapters        string // folder of <run>/step-N adapters to watch ("" : none)
	ServedModelName string // the base model's name in the API (default: the folder's name)
	DType           string // weights in memory: "float32" (default) or "bfloat16"; computed in float32 either way
	Host            string
	Port            int    // 0: any free port (the flag's default is 8000)
	APIKey          string // require "Authorization: Bearer <key>" when set
	MaxBatch        int    // sequences decoded together
	MaxQueue        int    // sequences (n of each request) waiting before 429; 0: 256, as the flag (a queue cannot be turned off: one request is always taken when none waits)
	PrefillTokens   int    // prompt tokens fed per step (chunked prefill; 0: the engine's default)
	KVCacheBytes    int64  // KV cache budget; 0: no limit (unlike the flag's default of 2 GiB), negative: NewServer's error
	MaxAdapters     int    // steps kept loaded per run
	MaxTokens       int    // cap (and default, within the context and the KV budget) of max_tokens
	MaxBodyBytes    int64  // request body cap (413 beyond)
	RequestTimeout  time.Duration
	DrainTimeout    time.Duration // how long shutdown waits for requests in flight
	PollInterval    time.Duration // adapter folder polling
	// DisablePrefixCaching turns off reusing the KV rows of finished
	// requests for later prompts with the same beginning (on by default,
	// as in vLLM).
	DisablePrefixCaching bool
	// GenerationConfig is vLLM's --generation-config: "vllm" (the
	// default, as ART starts its vLLM server) keeps the fixed sampling
	// defaults of a request that leaves them out (temperature 1, no top_p,
	// top_k, min_p or repetition penalty, --max-tokens); "auto" (vLLM's
	// own default) takes them from the model folder's
	// generation_config.json, and any other value is a folder whose
	// generation_config.json they come from instead. Rollouts for RL sample the model itself:
	// an instruct model's recommended top_k 20 and repetition penalty
	// would sample another policy than the one the trainer's ratios
	// compare against, without a word in the client's request.
	GenerationConfig string
	// ReturnTokensAsTokenIDs is vLLM's --return-tokens-as-token-ids:
	// logprobs tokens are named "token_id:<id>" unless a request's
	// return_tokens_as_token_ids says otherwise. ART starts vLLM so and
	// reads the sampled ids from those names.
	ReturnTokensAsTokenIDs bool

	// Set by the caller, not by flags.
	Backend kernels.Backend // where Model is loaded and run (cmd builds it); unused with Upstream
	Log     *slog.Logger
	// Ready, when set, is called with the listening address once the
	// server accepts connections.
	Ready func(addr string)
}

// AddFlags registers the options as command-line flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Model, "model", "", "model folder: config.json, *.safetensors, tokenizer.json, tokenizer_config.json (this or --upstream is required)")
	fs.StringVar(&o.Upstream, "upstream", "", "forward every /v1 request to the vLLM server at this URL instead of loading --model, pushing each new adapter step to it (vLLM needs VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora)")
	fs.StringVar(&o.UpstreamAPIKey, "upstream-api-key", "", "bearer token sent to the --upstream vLLM server (its --api-key) with the /v1 requests; hone-serve reads HONE_UPSTREAM_API_KEY when this flag is not given")
	fs.StringVar(&o.Adapters, "adapters", "", "watch this folder for LoRA adapters laid out as <run>/step-N/ with a <run>/latest pointer")
	fs.StringVar(&o.DType, "dtype", "float32", "weights in memory: float32, or bfloat16 (half the memory, and faster decoding: 1.8× at one stream on the Qwen2.5-0.5B shape; rounds the weights, computes in float32)")
	fs.StringVar(&o.ServedModelName, "served-model-name", "", "name of the base model in the API (default: the model folder's name)")
	fs.StringVar(&o.Host, "host", "127.0.0.1", "address to listen on (0.0.0.0 exposes the server to the network: set --api-key then, or a warning is logged)")
	fs.IntVar(&o.Port, "port", 8000, "port to listen on (0: any free port)")
	fs.StringVar(&o.APIKey, "api-key", "", "require this bearer token on /v1 requests (/health and /metrics stay open); hone-serve reads HONE_API_KEY when this flag is not given, which keeps the key out of the process list")
	fs.IntVar(&o.MaxBatch, "max-batch", 32, "sequences decoded together in one step")
	fs.IntVar(&o.MaxQueue, "max-queue", 256, "sequences waiting for the batch, each request counting its n, before a request that would pass it gets 429 (one is always taken when none waits); also the requests waiting to score a prompt (echo with logprobs)")
	fs.IntVar(&o.PrefillTokens, "prefill-tokens", 512, "prompt tokens fed per step, over all new requests (chunked prefill: running sequences keep decoding while long prompts load)")
	fs.Int64Var(&o.KVCacheBytes, "kv-cache-bytes", 2<<30, "KV cache budget in bytes (0: unlimited)")
	enable := fs.VarPF(negatedBool{&o.DisablePrefixCaching}, "enable-prefix-caching", "",
		"reuse KV cache rows across requests: a prompt that begins with the tokens of a finished or running request (same model or adapter step) starts from its rows, so a multi-turn conversation prefills only its new turn and requests sharing a prompt prefill it once. Rows of finished requests stay within --kv-cache-bytes and give way to new requests, least recently used first")
	enable.NoOptDefVal = "true"
	fs.BoolVar(&o.DisablePrefixCaching, "no-enable-prefix-caching", false, "turn prefix caching off (the same as --enable-prefix-caching=false)")
	fs.StringVar(&o.GenerationConfig, "generation-config", "vllm", "where the sampling defaults of a request that leaves them out come from, as vLLM's flag: vllm (the default, as ART starts vLLM: rollouts sample the model itself) keeps the fixed defaults (temperature 1, top_p 1, no top_k, min_p or repetition penalty, max_tokens from --max-tokens); auto (vLLM's own default) takes temperature, top_p, top_k, min_p, repetition_penalty and max_new_tokens (then also a cap of max_tokens) from the model folder's generation_config.json, where it sets them; a folder path takes them, and the eos_token_id that replies stop on besides the tokenizer's eos_token, from that folder's generation_config.json instead")
	fs.BoolVar(&o.ReturnTokensAsTokenIDs, "return-tokens-as-token-ids", false, "as vLLM's flag (which ART starts it with): name every logprobs token \"token_id:<id>\" unless a request's return_tokens_as_token_ids is false, so that a client reads the sampled ids, which a token's text cannot always name")
	fs.IntVar(&o.MaxAdapters, "max-adapters", 2, "adapter steps kept loaded per run: the one <run>/latest names and the most recently current others (addressable as <run>@<step>)")
	fs.IntVar(&o.MaxTokens, "max-tokens", 4096, "cap and default of max_tokens / max_completion_tokens (the default also within the context and what --kv-cache-bytes holds for the request's n choices)")
	fs.Int64Var(&o.MaxBodyBytes, "max-body-bytes", 8<<20, "largest request body accepted (413 beyond)")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 10*time.Minute, "deadline of one request (504 beyond); reading its body gets 1s more (408 beyond) and writing its answer 2s more, then a client that stopped sending or reading is cut off")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 60*time.Second, "on shutdown, how long requests in flight may finish; then they are failed (503), and a client that stopped sending or reading is cut off 1 to 2s later; a model step stuck in the backend is given up 5s after the timeout")
	fs.DurationVar(&o.PollInterval, "poll-interval", time.Second, "how often the adapter folder is checked")
}

// WithDefaults is o with every unset or non-positive setting at its
// flag's default, as the server reads it, except three whose 0 means
// something of its own: Port (any free port), KVCacheBytes (no limit)
// and PrefillTokens (the engine's default, 512, the flag's too). A
// negative limit is taken as 0 here; NewServer and Run refuse it first
// (checkLimits), as hone-serve's flags do.
func (o Options) WithDefaults() Options {
	def := Options{}
	fs := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	def.AddFlags(fs)
	if o.Host == "" {
		o.Host = def.Host
	}
	if o.DType == "" {
		o.DType = def.DType
	}
	if o.GenerationConfig == "" {
		o.GenerationConfig = def.GenerationConfig
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = def.MaxBatch
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = def.MaxQueue
	}
	if o.MaxAdapters <= 0 {
		o.MaxAdapters = def.MaxAdapters
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = def.MaxTokens
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = def.MaxBodyBytes
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = def.RequestTimeout
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = def.DrainTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = def.PollInterval
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// LimitError is a negative limit of Options: WithDefaults would put the
// flag's default in its place (or, for KVCacheBytes, the engine no
// limit), where the caller had asked for a limit of their own. It names
// the field and its flag; hone-serve shows it as its flag's usage error
// (FlagMessage), so the one table below serves both.
type LimitError struct {
	Field, Flag string // MaxBatch, max-batch
	Value       any
	Want, Zero  string // "a sequence count", "the default (32)"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("serve: %s %v (--%s): want %s, or 0 for %s", e.Field, e.Value, e.Flag, e.Want, e.Zero)
}

// FlagMessage is the error as a command line shows it, by its flag.
func (e *LimitError) FlagMessage() string {
	return fmt.Sprintf("--%s %v: want %s, or 0 for %s", e.Flag, e.Value, e.Want, e.Zero)
}

// NegativeLimit is the first negative limit of o, nil when there is none.
func (o Options) NegativeLimit() *LimitError {
	fs := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	(&Options{}).AddFlags(fs)
	for _, l := range []struct {
		field, flag, want string
		neg               bool
		val               any
	}{
		{"MaxBatch", "max-batch", "a sequence count", o.MaxBatch < 0, o.MaxBatch},
		{"MaxQueue", "max-queue", "a sequence count", o.MaxQueue < 0, o.MaxQueue},
		{"PrefillTokens", "prefill-tokens", "a token count", o.PrefillTokens < 0, o.PrefillTokens},
		{"KVCacheBytes", "kv-cache-bytes", "a byte count", o.KVCacheBytes < 0, o.KVCacheBytes},
		{"MaxAdapters", "max-adapters", "a step count", o.MaxAdapters < 0, o.MaxAdapters},
		{"MaxTokens", "max-tokens", "a token count", o.MaxTokens < 0, o.MaxTokens},
		{"MaxBodyBytes", "max-body-bytes", "a byte count", o.MaxBodyBytes < 0, o.MaxBodyBytes},
		{"RequestTimeout", "request-timeout", "a duration", o.RequestTimeout < 0, o.RequestTimeout},
		{"DrainTimeout", "drain-timeout", "a duration", o.DrainTimeout < 0, o.DrainTimeout},
		{"PollInterval", "poll-interval", "a duration", o.PollInterval < 0, o.PollInterval},
	} {
		if !l.neg {
			continue
		}
		zero := "the default (" + fs.Lookup(l.flag).DefValue + ")"
		if l.field == "KVCacheBytes" {
			zero = "no limit"
		}
		return &LimitError{Field: l.field, Flag: l.flag, Value: l.val, Want: l.want, Zero: zero}
	}
	return nil
}

// checkLimits is NegativeLimit as an error (a nil one when there is none).
func (o Options) checkLimits() error {
	if l := o.NegativeLimit(); l != nil {
		return l
	}
	return nil
}

// Run serves until ctx ends, then drains: new requests get 503 while those
// in flight finish (up to DrainTimeout), and the listener closes. With
// Upstream set it serves serve/vllm's front for that vLLM server instead,
// and Model and Backend are not used (Backend may be nil). A model folder
// that is missing, incomplete or malformed (its chat template failing the
// load-time check included) is bad input, stageerr.ErrBadInput: the user's
// input, not a failure of the run; so is a malformed Upstream URL.
func Run(ctx context.Context, o Options) error {
	if err := o.checkLimits(); err != nil {
		return stageerr.BadInput(err)
	}
	o = o.WithDefaults()
	if o.Upstream != "" {
		return runFront(ctx, o)
	}
	if o.Backend == nil {
		return errors.New("serve: no backend (Options.Backend)")
	}
	s, err := NewServer(o)
	if err != nil {
		return stageerr.BadInput(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		s.eng.Shutdown(context.Background())
		return fmt.Errorf("serve: %w", err)
	}
	return s.Serve(ctx, ln)
}

// runFront serves the vLLM front: requests forwarded to o.Upstream, and the
// adapters folder's newest steps loaded into vLLM as "<run>@<step>".
func runFront(ctx context.Context, o Options) error {
	f, err := vllm.NewFront(vllm.Options{
		Upstream:     o.Upstream,
		UpstreamKey:  o.UpstreamAPIKey,
		AdaptersDir:  o.Adapters,
		KeepAdapters: o.MaxAdapters,
		APIKey:       o.APIKey,
		MaxBodyBytes: o.MaxBodyBytes,
		Log:          o.Log,
		Interval:     o.PollInterval,
	})
	if err != nil {
		return stageerr.BadInput(fmt.Errorf("serve: %w", err)) // a malformed --upstream URL
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	return f.Serve(ctx, ln, o.DrainTimeout)
}

// Serve serves on ln until ctx ends, then drains as Run describes.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	o := s.o
	hs := httpserver.New(s.Handler(), o.Log)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	if s.reg != nil {
		go s.reg.Watch(watchCtx, o.PollInterval)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	o.Log.Info("hone-serve listening", "addr", ln.Addr().String(), "model", s.name)
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	var serr error
	select {
	case serr = <-errc:
		// The listener failed, but requests may still be in flight on
		// open connections: they are drained as on a stop, so a step stuck
		// in the backend is given up on here too and the process exits.
		o.Log.Error("hone-serve stopped accepting connections: draining", "err", serr, "timeout", o.DrainTimeout)
	case <-ctx.Done():
		o.Log.Info("hone-serve draining", "timeout", o.DrainTimeout)
	}
	derr := s.drain(hs)
	switch {
	case serr != nil && derr != nil:
		// The drain's error only as words: its deadline would make the
		// listener's failure read as an interrupt (exit 130, not 1).
		return fmt.Errorf("serve: %w (drain: %v)", serr, derr)
	case serr != nil:
		return fmt.Errorf("serve: %w", serr)
	case derr != nil:
		return fmt.Errorf("serve: drain: %w", derr)
	}
	return nil
}

// drain stops the server as Run describes: the requests in flight get up to
// DrainTimeout (and a stuck engine step the engine's StopGrace), then hs
// closes its connections.
func (s *Server) drain(hs *http.Server) error {
	dctx, cancel := context.WithTimeout(context.Background(), s.o.DrainTimeout)
	defer cancel()
	derr := s.Shutdown(dctx)
	hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer hcancel()
	if err := hs.Shutdown(hctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		hs.Close()
	}
	return derr
}

// negatedBool is a boolean flag that stores its negation, so that
// --enable-prefix-caching (default true) can set a field whose zero value
// means "on" for callers that build Options in code.
type negatedBool struct{ p *bool }

func (b negatedBool) String() string {
	if b.p == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.p)
}

func (b negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = !v
	return nil
}

func (b negatedBool) Type() string { return "bool" }
