// Command servebench measures hone-serve end to end over HTTP: time to first
// token, single-stream decode tokens/s, and aggregate tokens/s with 1, 8 and
// 32 concurrent streams, on a model folder, and in the same run PyTorch's
// KV-cache decode of the same shape (testdata/golden/model/reference.py
// bench-decode, run by /usr/bin/python3 as a child process after the Hone
// measurements, with batch = the stream count, float32 like Hone's served
// weights, torch.set_num_threads as many as Hone's workers, the same BLAS environment and
// OMP_WAIT_POLICY=PASSIVE unless set). Then (--turns) it times one
// multi-turn conversation, each turn's prompt the whole conversation so
// far, on hone-serve with its prefix cache off and on: TTFT per turn; and
// (--group) a group of requests sent at once with one shared prompt, as a
// GRPO group's episodes start: wall time and the slowest TTFT.
//
// The model must have one of reference.py's bench shapes (or pass
// --torch=false); write them with `hone-train init-model`:
//
//	tiny: --family qwen2 --hidden 256 --layers 4 --heads 8 --kv-heads 4 --intermediate 688 --vocab 4096
//	05b:  --family qwen2 --hidden 896 --layers 24 --heads 14 --kv-heads 2 --intermediate 4864 --vocab 151936 --tie-embeddings
//
//	go run ./serve/internal/servebench --model /tmp/tiny --streams 1,8,32 --tokens 64
//
// The two contenders do not do the same work around the model: Hone
// samples at temperature 1 and streams every token over HTTP to separate
// clients whose requests join the batch as they arrive; the reference
// decodes one fixed batch greedily in-process. Its figures are the model
// cost a server would add its overhead to. Measured results: RESULTS.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/serve"
)

type options struct {
	model   string
	streams []int
	tokens  int
	prompt  int
	threads int
	batch   int
	dtype   string
	cpuprof string
	turns   int // multi-turn conversation: turns (0: skip)
	turnNew int // new prompt tokens each turn adds
	group   int // requests sent together with one prompt (0: skip)
	groupP  int // their shared prompt tokens

	torch        bool
	python       string
	reference    string
	torchThreads int
}

func main() {
	var o options
	fs := pflag.NewFlagSet("servebench", pflag.ContinueOnError)
	fs.StringVar(&o.model, "model", "", "model folder (required)")
	fs.IntSliceVar(&o.streams, "streams", []int{1, 8, 32}, "concurrent streams per measurement")
	fs.IntVar(&o.tokens, "tokens", 64, "tokens generated per stream")
	fs.IntVar(&o.prompt, "prompt", 32, "prompt tokens per stream")
	fs.IntVar(&o.threads, "threads", 0, "CPU workers (0: all cores)")
	fs.IntVar(&o.batch, "max-batch", 32, "server batch size")
	fs.StringVar(&o.dtype, "dtype", "float32", "hone-serve's --dtype: weights in memory as float32 or bfloat16 (PyTorch's reference stays float32)")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of the measured Hone runs to this file")
	fs.IntVar(&o.turns, "turns", 6, "then time one conversation of this many turns with hone-serve's prefix cache off and on (0: skip)")
	fs.IntVar(&o.turnNew, "turn-tokens", 64, "new prompt tokens each turn of the conversation adds after the reply")
	fs.IntVar(&o.group, "group", 8, "then time this many requests sent at once with the same prompt (a GRPO group's first turn), prefix cache off and on (0: skip)")
	fs.IntVar(&o.groupP, "group-prompt", 256, "the group's shared prompt tokens (each request adds one of its own)")
	fs.BoolVar(&o.torch, "torch", true, "also time reference.py's PyTorch KV-cache decode of the same shape")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "interpreter with torch")
	fs.StringVar(&o.reference, "reference", "", "path of reference.py (default: found from the working directory)")
	fs.IntVar(&o.torchThreads, "torch-threads", 0, "torch.set_num_threads for the reference (0: as many as Hone's --threads)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "servebench: hone-serve TTFT and decode throughput over HTTP, next to PyTorch\n\n"+
			"example: hone-train init-model --family qwen2 --hidden 256 --layers 4 --heads 8 --kv-heads 4 --intermediate 688 --vocab 4096 -o /tmp/tiny\n"+
			"         go run ./serve/internal/servebench --model /tmp/tiny\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if o.model == "" {
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o.threads = cpu.SpareProc(o.threads) // as hone-serve does
	if o.torchThreads <= 0 {
		// Both sides on as many threads (a fixed 2 for PyTorch compared
		// unlike things on a machine of more cores).
		o.torchThreads = o.threads
	}
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

type streamResult struct {
	ttft, total time.Duration
	tokens      int
	ids         []int32 // the generated tokens
}

// row is one contender's figures at one stream count.
type row struct {
	who                 string
	streams             int
	ttftP50, ttftMax    float64 // ms
	decodePerStream     float64 // tokens/s after the first token, mean over streams
	aggregate           float64 // all generated tokens / wall time from first request to last token
	avgBatch, msPerStep float64 // Hone only: generated tokens per model step, time per step
	err                 error
}

func run(ctx context.Context, o options, w io.Writer) error {
	if o.tokens < 2 || o.prompt < 1 || len(o.streams) == 0 {
		return fmt.Errorf("--tokens must be ≥ 2, --prompt ≥ 1, --streams not empty")
	}
	be, err := cpu.New(cpu.Options{Workers: o.threads})
	if err != nil {
		return err
	}
	defer be.Close()
	// Prefix caching off: the streams' random byte prompts often share
	// their first tokens, and the prefill is what is compared with PyTorch.
	s, err := newServer(o, be, false)
	if err != nil {
		return err
	}
	shape := ""
	if o.torch {
		if shape, err = torchShape(s.Engine().Model().Config); err != nil {
			return err
		}
		if o.reference == "" {
			if o.reference, err = findReference(); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "servebench: %s, %d prompt + %d generated tokens per stream, sampled at temperature 1\n", o.model, o.prompt, o.tokens)
	fmt.Fprintf(w, "environment: %s NumCPU=%d\n", blasEnv(), runtime.NumCPU())
	fmt.Fprintf(w, "hone:  hone-serve over HTTP (streamed /v1/completions), backend %s, %d workers, max batch %d, weights %s\n", be.Name(), o.threads, o.batch, o.dtype)
	if o.torch {
		fmt.Fprintf(w, "torch: %s %s bench-decode --shape %s --dtype f32 --threads %d (greedy, one batch of n sequences, no HTTP)\n",
			o.python, o.reference, shape, o.torchThreads)
	}
	rows, err := measureHone(ctx, o, s, w)
	if err != nil {
		return err
	}
	s = nil // its model is garbage before measureTurns loads two more
	if o.turns > 0 {
		if err := measureTurns(ctx, o, be, w); err != nil {
			return err
		}
	}
	if o.group > 0 {
		if err := measureGroup(ctx, o, be, w); err != nil {
			return err
		}
	}
	if o.torch {
		for _, n := range o.streams {
			r := row{who: "torch", streams: n}
			t, err := torchDecode(ctx, o, shape, n)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				r.err = err
			} else {
				// Every sequence gets its first token from the prompt step,
				// then one per decode step.
				decode := float64(n*(o.tokens-1)) / t.TokensPerS
				r.ttftP50, r.ttftMax = 1000*t.PrefillS, 1000*t.PrefillS
				r.decodePerStream = t.TokensPerS / float64(n)
				r.aggregate = float64(n*o.tokens) / (t.PrefillS + decode)
			}
			rows = append(rows, r)
		}
	}
	fmt.Fprintf(w, "\n%-6s %8s %12s %12s %18s %16s %10s %10s\n", "who", "streams", "ttft_p50_ms", "ttft_max_ms",
		"decode_tok/s/strm", "aggregate_tok/s", "avg_batch", "ms/step")
	agg := map[string]map[int]float64{}
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(w, "%-6s %8d  failed: %v\n", r.who, r.streams, r.err)
			continue
		}
		b, ms := "-", "-"
		if r.who == "hone" {
			b, ms = fmt.Sprintf("%.1f", r.avgBatch), fmt.Sprintf("%.1f", r.msPerStep)
		}
		fmt.Fprintf(w, "%-6s %8d %12.1f %12.1f %18.2f %16.2f %10s %10s\n", r.who, r.streams, r.ttftP50, r.ttftMax,
			r.decodePerStream, r.aggregate, b, ms)
		if agg[r.who] == nil {
			agg[r.who] = map[int]float64{}
		}
		agg[r.who][r.streams] = r.aggregate
	}
	first, last := o.streams[0], o.streams[len(o.streams)-1]
	for _, who := range []string{"hone", "torch"} {
		if a, b := agg[who][first], agg[who][last]; a > 0 && b > 0 {
			fmt.Fprintf(w, "%s: aggregate at %d streams = %.1fx the aggregate at %d\n", who, last, b/a, first)
		}
	}
	for _, n := range o.streams {
		if h, t := agg["hone"][n], agg["torch"][n]; h > 0 && t > 0 {
			fmt.Fprintf(w, "hone/torch aggregate at %d streams: %.2f\n", n, h/t)
		}
	}
	return nil
}

// newServer loads o.model into a server. Prefix caching stays off unless
// asked for: the streams' random byte prompts often share their first
// tokens, and the prefill is what is compared with PyTorch.
func newServer(o options, be *cpu.Backend, prefixCaching bool) (*serve.Server, error) {
	so := serve.Options{Model: o.model, DType: o.dtype, MaxBatch: o.batch, MaxQueue: 1024, KVCacheBytes: 0, MaxTokens: o.tokens,
		DisablePrefixCaching: !prefixCaching, Backend: be, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return serve.NewServer(so)
}

// listen serves s on a loopback port; stop shuts it down.
func listen(s *serve.Server) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx, ln) }()
	return "http://" + ln.Addr().String() + "/v1/completions", func() { cancel(); <-done }, nil
}

// warmServer starts a server on a loopback port and sends it one warm-up
// request, as measureHone does. Its prompt is all token 0, and the
// measured prompts start with a token ≥ 1, so it shares no rows with them.
func warmServer(ctx context.Context, o options, be *cpu.Backend, prefixCaching bool) (*serve.Server, string, func(), error) {
	s, err := newServer(o, be, prefixCaching)
	if err != nil {
		return nil, "", nil, err
	}
	url, stop, err := listen(s)
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := stream(ctx, url, make([]int32, o.prompt), o.tokens); err != nil {
		stop()
		return nil, "", nil, fmt.Errorf("warm-up: %w", err)
	}
	return s, url, stop, nil
}

// measuredPrompt is promptIDs with a first token ≥ 1, so that it shares no
// rows with warmServer's warm-up prompt.
func measuredPrompt(seed uint64, n, vocab int) []int32 {
	p := promptIDs(seed, n, vocab)
	p[0] = max(p[0], 1)
	return p
}

// measureTurns times one conversation of o.turns turns, the same on a
// server with prefix caching off and on: each turn's prompt is the last
// prompt, its reply and o.turnNew new tokens, so without the cache every
// turn prefills the whole conversation again.
func measureTurns(ctx context.Context, o options, be *cpu.Backend, w io.Writer) error {
	fmt.Fprintf(w, "\nmulti-turn conversation: %d-token first prompt, each turn adds its %d-token reply and %d new tokens\n",
		o.prompt, o.tokens, o.turnNew)
	var ttft [2][]float64
	var promptLen []int
	var hit int64
	for i, caching := range []bool{false, true} {
		s, url, stop, err := warmServer(ctx, o, be, caching)
		if err != nil {
			return err
		}
		vocab := s.Engine().Model().Config.Vocab
		prompt := measuredPrompt(1<<20, o.prompt, vocab)
		for t := range o.turns {
			r, err := stream(ctx, url, prompt, o.tokens)
			if err != nil {
				stop()
				return fmt.Errorf("turn %d: %w", t+1, err)
			}
			ttft[i] = append(ttft[i], r.ttft.Seconds()*1000)
			if i == 0 {
				promptLen = append(promptLen, len(prompt))
			}
			prompt = slices.Concat(prompt, r.ids, promptIDs(1<<20+uint64(t)+1, o.turnNew, vocab))
		}
		if caching {
			hit = s.Engine().Stats().PrefixHit
		}
		stop()
	}
	fmt.Fprintf(w, "%6s %14s %16s %16s %10s\n", "turn", "prompt_tokens", "ttft_ms_nocache", "ttft_ms_cache", "ratio")
	var sum [2]float64
	for t := range ttft[0] {
		sum[0] += ttft[0][t]
		sum[1] += ttft[1][t]
		fmt.Fprintf(w, "%6d %14d %16.1f %16.1f %10.2f\n", t+1, promptLen[t], ttft[0][t], ttft[1][t], ttft[0][t]/ttft[1][t])
	}
	fmt.Fprintf(w, "prefix cache: %d prompt tokens reused; TTFT summed over turns %.0f ms without, %.0f ms with (%.2fx)\n",
		hit, sum[0], sum[1], sum[0]/sum[1])
	return nil
}

// measureGroup sends o.group requests at once whose prompts share their
// first o.groupP tokens, as a GRPO group's episodes start, to a server
// with the prefix cache off and on, and reports the wall time until all
// have their o.tokens tokens, and the slowest TTFT.
func measureGroup(ctx context.Context, o options, be *cpu.Backend, w io.Writer) error {
	fmt.Fprintf(w, "\ngroup: %d requests at once, a %d-token shared prompt and one token of their own, %d tokens each\n",
		o.group, o.groupP, o.tokens)
	fmt.Fprintf(w, "%-14s %10s %14s %16s\n", "prefix_cache", "wall_s", "ttft_max_ms", "tokens_reused")
	var wall [2]float64
	for i, caching := range []bool{false, true} {
		s, url, stop, err := warmServer(ctx, o, be, caching)
		if err != nil {
			return err
		}
		vocab := s.Engine().Model().Config.Vocab
		shared := measuredPrompt(1<<21, o.groupP, vocab)
		res := make([]streamResult, o.group)
		errs := make([]error, o.group)
		var wg sync.WaitGroup
		t0 := time.Now()
		for j := range o.group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[j], errs[j] = stream(ctx, url, append(slices.Clip(shared), int32(j%min(vocab, 256))), o.tokens)
			}()
		}
		wg.Wait()
		wall[i] = time.Since(t0).Seconds()
		hit := s.Engine().Stats().PrefixHit
		stop()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		ttft := 0.0
		for _, r := range res {
			ttft = max(ttft, r.ttft.Seconds()*1000)
		}
		fmt.Fprintf(w, "%-14s %10.2f %14.1f %16d\n", map[bool]string{false: "off", true: "on"}[caching], wall[i], ttft, hit)
	}
	fmt.Fprintf(w, "group wall time with the prefix cache: %.2fx faster\n", wall[0]/wall[1])
	return nil
}

// measureHone serves s on a loopback port and runs each stream count
// against it.
func measureHone(ctx context.Context, o options, s *serve.Server, w io.Writer) ([]row, error) {
	url, stop, err := listen(s)
	if err != nil {
		return nil, err
	}
	defer stop()
	vocab := s.Engine().Model().Config.Vocab

	// One warm-up stream.
	if _, err := stream(ctx, url, promptIDs(0, o.prompt, vocab), o.tokens); err != nil {
		return nil, err
	}
	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var rows []row
	for _, n := range o.streams {
		res := make([]streamResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		st0 := s.Engine().Stats()
		t0 := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i], errs[i] = stream(ctx, url, promptIDs(uint64(i+1), o.prompt, vocab), o.tokens)
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		st1 := s.Engine().Stats()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		var ttfts []float64
		total, decode := 0, 0.0
		for _, r := range res {
			ttfts = append(ttfts, r.ttft.Seconds()*1000)
			total += r.tokens
			if r.tokens > 1 {
				decode += float64(r.tokens-1) / (r.total - r.ttft).Seconds()
			}
		}
		sort.Float64s(ttfts)
		r := row{who: "hone", streams: n, ttftP50: ttfts[len(ttfts)/2], ttftMax: ttfts[len(ttfts)-1],
			decodePerStream: decode / float64(n), aggregate: float64(total) / wall.Seconds()}
		// Generated tokens per model step: how full the running batch was
		// (a step that only prefills a prompt chunk generates nothing, so
		// chunked prefill lowers it).
		if steps := st1.Steps - st0.Steps; steps > 0 {
			r.avgBatch = float64(st1.GenTokens-st0.GenTokens) / float64(steps)
			r.msPerStep = 1000 * (st1.StepSeconds - st0.StepSeconds) / float64(steps)
		}
		// The whole row at once, so that a run cut short keeps it.
		fmt.Fprintf(w, "  hone %2d streams: ttft p50 %.1f ms, max %.1f ms, %.2f tokens/s a stream, %.2f aggregate, avg batch %.1f, %.1f ms/step (%.1f s wall)\n",
			n, r.ttftP50, r.ttftMax, r.decodePerStream, r.aggregate, r.avgBatch, r.msPerStep, wall.Seconds())
		rows = append(rows, r)
	}
	return rows, nil
}

func promptIDs(seed uint64, n, vocab int) []int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(min(vocab, 256))) // byte tokens exist in every vocabulary we write
	}
	return ids
}

// stream runs one streamed completion and times its first and last token.
func stream(ctx context.Context, url string, prompt []int32, tokens int) (streamResult, error) {
	body, _ := json.Marshal(map[string]any{
		"prompt": prompt, "max_tokens": tokens, "stream": true, "ignore_eos": true, "return_token_ids": true,
		"temperature": 1, "seed": 1,
	})
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return streamResult{}, err
	}
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return streamResult{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	var r streamResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				TokenIDs []int32 `json:"token_ids"`
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return r, err
		}
		if chunk.Error != nil {
			return r, errors.New(chunk.Error.Message)
		}
		for _, c := range chunk.Choices {
			if len(c.TokenIDs) > 0 && r.tokens == 0 {
				r.ttft = time.Since(t0)
			}
			r.tokens += len(c.TokenIDs)
			r.ids = append(r.ids, c.TokenIDs...)
		}
	}
	r.total = time.Since(t0)
	return r, sc.Err()
}
