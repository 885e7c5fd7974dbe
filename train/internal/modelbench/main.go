package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/kernels/cpu"
)

// Options of one benchmark run.
type Options struct {
	Quick        bool
	Rows         string // comma-separated row names, "" for all
	Contenders   string // comma-separated: hone, torch
	Batch, Seq   int    // training batch × sequence length
	Steps        int    // timed training steps (after one warm-up)
	Tokens       int    // timed decode steps
	Prompt       int    // decode prompt length
	Checkpoint   bool   // Hone: gradient checkpointing in training
	TorchThreads int
	Python       string
	Reference    string // path of reference.py
	PeakSize     int    // square SGEMM size for the peak
	Repeat       int    // runs of each decode row per contender (≤ 0: one)
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Quick, "quick", false, "small batches and few steps, for a smoke run")
	fs.StringVar(&o.Rows, "rows", "", "comma-separated rows to run (default all): "+strings.Join(rowNames(), ", "))
	fs.StringVar(&o.Contenders, "contenders", "hone,torch", "who runs: hone, torch")
	fs.IntVar(&o.Batch, "batch", 8, "training sequences per step")
	fs.IntVar(&o.Seq, "seq", 256, "training tokens per sequence")
	fs.IntVar(&o.Steps, "steps", 2, "timed training steps after one warm-up step")
	fs.IntVar(&o.Tokens, "tokens", 16, "timed decode steps")
	fs.IntVar(&o.Prompt, "prompt", 16, "decode prompt tokens per sequence")
	fs.BoolVar(&o.Checkpoint, "checkpoint", false, "Hone: recompute block activations in backward")
	fs.IntVar(&o.TorchThreads, "torch-threads", 0, "torch.set_num_threads for the reference (0: as many as Hone's kernel workers, GOMAXPROCS)")
	fs.StringVar(&o.Python, "python", "/usr/bin/python3", "interpreter with torch")
	fs.StringVar(&o.Reference, "reference", "", "path of reference.py (default: found from the working directory)")
	fs.IntVar(&o.PeakSize, "peak-size", 2048, "size of the square SGEMM that sets the peak")
	fs.IntVar(&o.Repeat, "repeat", 3, "runs of each decode row per contender, taking turns; the table gives the median "+
		"and the range (training rows run once: PyTorch's 0.5B step alone takes minutes)")
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err := worker(ctx, os.Args[2:], os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "modelbench worker:", err)
			os.Exit(1)
		}
		return
	}
	var o Options
	fs := pflag.NewFlagSet("modelbench", pflag.ContinueOnError)
	o.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "modelbench: train/model next to the PyTorch reference, LoRA training and decode\n\n"+
			"example: OPENBLAS_NUM_THREADS=1 go run ./train/internal/modelbench --quick\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := Run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "modelbench:", err)
		os.Exit(1)
	}
}

// row is one line of the table: a measurement both contenders run.
type row struct {
	name  string
	shape string
	train bool
	batch int
	bf16  bool
	// compute: bf16 compute (cpu.Options.Compute, needs bf16 weights and
	// AVX512-BF16); for PyTorch, bf16 autocast in training.
	compute bool
}

func rows() []row {
	return []row{
		{name: "train-tiny", shape: "tiny", train: true},
		{name: "train-05b", shape: "05b", train: true},
		// bf16 weights and bf16 compute (issue #23); PyTorch beside it
		// under bf16 autocast. Hone's worker exits without AVX512-BF16.
		{name: "train-05b-bf16", shape: "05b", train: true, bf16: true, compute: true},
		{name: "decode-05b-b1-f32", shape: "05b", batch: 1},
		{name: "decode-05b-b1-bf16", shape: "05b", batch: 1, bf16: true},
		{name: "decode-05b-b8-f32", shape: "05b", batch: 8},
		{name: "decode-05b-b8-bf16", shape: "05b", batch: 8, bf16: true},
		// Continuous batching in hone-serve steps many sequences at once:
		// the aggregate rate there must grow well past batch 1.
		{name: "decode-05b-b32-f32", shape: "05b", batch: 32},
		{name: "decode-05b-b32-bf16", shape: "05b", batch: 32, bf16: true},
		{name: "decode-05b-b32-bf16c", shape: "05b", batch: 32, bf16: true, compute: true},
	}
}

func rowNames() []string {
	var n []string
	for _, r := range rows() {
		n = append(n, r.name)
	}
	return n
}

// result is one contender's figure for one row.
type result struct {
	TokensPerS float64 `json:"tokens_per_s"`
	// Hone's decode rows only (see memorySpeed): the tokens/s a plain read
	// of the weights allows, and the step's time over the read's.
	ReadTokensPerS float64 `json:"read_tokens_per_s"`
	StepOverRead   float64 `json:"step_over_read"`
	RSS            int64   // bytes, from the child's rusage
	Err            error
}

// torchThreads is --torch-threads, 0 meaning as many threads as Hone's
// kernel workers: the workers (cpu.SpareProc(0) in a child with this
// process's environment) number GOMAXPROCS, all cores by default, and a
// fixed 2 for PyTorch compared unlike things on any machine of more cores.
func torchThreads(flag int) int {
	if flag > 0 {
		return flag
	}
	return runtime.GOMAXPROCS(0)
}

// Run measures and writes the report to w.
func Run(ctx context.Context, o Options, w io.Writer) error {
	if o.Quick {
		o.Batch, o.Seq, o.Steps, o.Tokens, o.Prompt = 2, 64, 1, 4, 8
		o.PeakSize = min(o.PeakSize, 1024)
		o.Repeat = 1
	}
	o.Repeat = max(o.Repeat, 1)
	o.TorchThreads = torchThreads(o.TorchThreads)
	if o.Batch < 1 || o.Seq < 1 || o.Steps < 1 || o.Tokens < 1 || o.Prompt < 1 {
		return fmt.Errorf("--batch, --seq, --steps, --tokens and --prompt must be ≥ 1")
	}
	want, who, err := selection(o)
	if err != nil {
		return err
	}
	if who["torch"] && o.Reference == "" {
		ref, err := findReference()
		if err != nil {
			return err
		}
		o.Reference = ref
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to run workers: %w", err)
	}
	env := os.Environ()
	if os.Getenv("OMP_WAIT_POLICY") == "" {
		env = append(env, "OMP_WAIT_POLICY=PASSIVE")
	}
	fmt.Fprintf(w, "BLAS environment: %s OMP_WAIT_POLICY=%s GOMAXPROCS=%d NumCPU=%d (Hone's workers: %d kernel workers, GOMAXPROCS one more, see cpu.SpareProc)\n",
		blasEnv(), envOr(env, "OMP_WAIT_POLICY"), runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "training: batch %d × %d tokens, %d timed step(s) after a warm-up, LoRA r8 on all projections; decode: prompt %d, %d timed steps, %d run(s) a contender, taking turns\n",
		o.Batch, o.Seq, o.Steps, o.Prompt, o.Tokens, o.Repeat)
	if who["torch"] {
		fmt.Fprintf(w, "PyTorch: %s %s, torch threads %d\n", o.Python, o.Reference, o.TorchThreads)
	}

	peak, err := gemmPeak(ctx, o.PeakSize)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "SGEMM peak (kernels/cpu, %d² square, best of 3): %.1f GFLOP/s\n\n", o.PeakSize, peak)

	table, err := runRows(ctx, w, o, want, who, self, env)
	if err != nil {
		return err
	}
	writeRateTable(w, table, peak, o.Repeat)
	writeComputeRatios(w, table)
	writeMemoryTable(w, table)
	return nil
}

// selection reads --rows (want; empty: every row) and --contenders (who).
func selection(o Options) (want, who map[string]bool, err error) {
	want = map[string]bool{}
	if o.Rows != "" {
		known := map[string]bool{}
		for _, n := range rowNames() {
			known[n] = true
		}
		for _, n := range strings.Split(o.Rows, ",") {
			n = strings.TrimSpace(n)
			if !known[n] {
				return nil, nil, fmt.Errorf("--rows: unknown row %q (known: %s)", n, strings.Join(rowNames(), ", "))
			}
			want[n] = true
		}
	}
	who = map[string]bool{}
	for _, c := range strings.Split(o.Contenders, ",") {
		switch c = strings.TrimSpace(c); c {
		case "hone", "torch":
			who[c] = true
		default:
			return nil, nil, fmt.Errorf("--contenders: unknown %q (want hone, torch)", c)
		}
	}
	return want, who, nil
}

// runRows runs the contenders on each row wanted, taking turns, printing a
// line per run, and returns the runs of each row.
func runRows(ctx context.Context, w io.Writer, o Options, want, who map[string]bool, self string, env []string) ([]line, error) {
	var table []line
	for _, r := range rows() {
		if len(want) > 0 && !want[r.name] {
			continue
		}
		ln := line{r: r, flops: flopsPerToken(r, o)}
		// The machines are shared and their speed drifts: the contenders take
		// turns, so that each sees the same spells.
		runs := o.Repeat
		if r.train {
			runs = 1
		}
		for i := 0; i < runs; i++ {
			for _, c := range []string{"hone", "torch"} {
				if !who[c] {
					continue
				}
				var args []string
				var bin string
				if c == "hone" {
					bin, args = self, append([]string{"worker"}, workerArgs(r, o)...)
				} else {
					bin, args = o.Python, append([]string{o.Reference}, torchArgs(r, o)...)
				}
				start := time.Now()
				res := runChild(ctx, bin, args, env)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				status := "ok"
				if res.Err != nil {
					status = res.Err.Error()
				}
				mem := ""
				if res.ReadTokensPerS > 0 {
					mem = fmt.Sprintf("  [plain read %.2f tokens/s, step/read %.2f]", res.ReadTokensPerS, res.StepOverRead)
				}
				fmt.Fprintf(w, "  %-20s %-5s %9.2f tokens/s  rss %6.2f GB  (%.0f s wall) %s%s\n", r.name, c, res.TokensPerS,
					float64(res.RSS)/1e9, time.Since(start).Seconds(), status, mem)
				if c == "hone" {
					ln.hone = append(ln.hone, res)
				} else {
					ln.torch = append(ln.torch, res)
				}
			}
		}
		table = append(table, ln)
	}
	return table, nil
}

// writeRateTable prints tokens/s, GFLOP/s (and the share of the SGEMM peak)
// and RSS of each row, for each contender.
func writeRateTable(w io.Writer, table []line, peak float64, repeat int) {
	fmt.Fprintf(w, "\n%-20s %20s %20s %8s %18s %18s %9s %9s\n", "row", "hone tok/s", "torch tok/s", "hone/pt",
		"hone GFLOP/s (%pk)", "torch GFLOP/s(%pk)", "hone RSS", "torch RSS")
	for _, ln := range table {
		cell := func(rs []result) (s summary, rate, gflops, rss string) {
			s = summarize(rs)
			if s.n == 0 {
				return s, "-", "-", "-"
			}
			rate = fmt.Sprintf("%.2f", s.median)
			if s.n > 1 {
				rate += fmt.Sprintf(" (%.1f–%.1f)", s.lo, s.hi)
			}
			gf := s.median * ln.flops / 1e9
			return s, rate, fmt.Sprintf("%.1f (%.0f%%)", gf, 100*gf/peak), fmt.Sprintf("%.2f GB", float64(s.rss)/1e9)
		}
		hs, ht, hg, hr := cell(ln.hone)
		ts, tt, tg, tr := cell(ln.torch)
		ratio := "-"
		if hs.n > 0 && ts.n > 0 {
			ratio = fmt.Sprintf("%.2f", hs.median/ts.median)
		}
		fmt.Fprintf(w, "%-20s %20s %20s %8s %18s %18s %9s %9s\n", ln.r.name, ht, tt, ratio, hg, tg, hr, tr)
	}
	if repeat > 1 {
		fmt.Fprintf(w, "decode rows: median of the runs that succeeded (range in brackets); hone/pt is the ratio of the medians\n")
	}
}

// line is one row of the report: every run of each contender.
type line struct {
	r           row
	hone, torch []result
	flops       float64 // per token
}

// writeMemoryTable prints, for Hone's decode rows, the tokens/s that a plain
// read of the weights allowed in the same processes and the step's time
// over the read's (medians over the runs): a row slower than its target
// with step/read near 1 was held back by the memory, not the code.
func writeMemoryTable(w io.Writer, table []line) {
	header := false
	for _, ln := range table {
		var reads, ratios []float64
		for _, r := range ln.hone {
			if r.Err == nil && r.ReadTokensPerS > 0 {
				reads = append(reads, r.ReadTokensPerS)
				ratios = append(ratios, r.StepOverRead)
			}
		}
		if len(reads) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nHone's decode against a plain read of its weights' bytes (same process, each step after a read; medians):\n")
			fmt.Fprintf(w, "%-20s %24s %10s\n", "row", "plain-read tok/s", "step/read")
			header = true
		}
		rate := fmt.Sprintf("%.2f", median(reads)) // median sorts reads
		if len(reads) > 1 {
			rate += fmt.Sprintf(" (%.1f–%.1f)", reads[0], reads[len(reads)-1])
		}
		fmt.Fprintf(w, "%-20s %24s %10.2f\n", ln.r.name, rate, median(ratios))
	}
}

// summary is what the table shows of one contender's runs of a row.
type summary struct {
	n              int     // runs that gave a figure
	median, lo, hi float64 // tokens/s
	rss            int64   // the largest peak RSS of those runs
}

// summarize takes the runs that succeeded: their median (the mean of the
// middle two for an even count), extremes and largest RSS.
func summarize(rs []result) summary {
	var v []float64
	var s summary
	for _, r := range rs {
		if r.Err != nil || r.TokensPerS <= 0 {
			continue
		}
		v = append(v, r.TokensPerS)
		s.rss = max(s.rss, r.RSS)
	}
	if s.n = len(v); s.n == 0 {
		return s
	}
	s.median = median(v)
	s.lo, s.hi = v[0], v[len(v)-1]
	return s
}

func workerArgs(r row, o Options) []string {
	if r.train {
		a := []string{"train", "--shape", r.shape, "--batch", fmt.Sprint(o.Batch), "--seq", fmt.Sprint(o.Seq),
			"--steps", fmt.Sprint(o.Steps), "--dtype", dtype(r), "--compute", compute(r)}
		if o.Checkpoint {
			a = append(a, "--checkpoint")
		}
		return a
	}
	return []string{"decode", "--shape", r.shape, "--batch", fmt.Sprint(r.batch), "--prompt", fmt.Sprint(o.Prompt),
		"--tokens", fmt.Sprint(o.Tokens), "--dtype", dtype(r), "--compute", compute(r)}
}

func compute(r row) string {
	if r.compute {
		return "bf16"
	}
	return "f32"
}

// computeRatios pairs each bf16-compute row with the row it is measured
// against: training with the float32 row, decode with the bf16-weights row
// (the issue #23 targets: ≥ 1.6× and ≥ 1.5×).
var computeRatios = [][2]string{{"train-05b-bf16", "train-05b"}, {"decode-05b-b32-bf16c", "decode-05b-b32-bf16"}}

// writeComputeRatios prints Hone's tokens/s of each bf16-compute row over
// its base row, when both ran in this run.
func writeComputeRatios(w io.Writer, table []line) {
	byName := map[string]summary{}
	for _, ln := range table {
		byName[ln.r.name] = summarize(ln.hone)
	}
	for _, p := range computeRatios {
		a, b := byName[p[0]], byName[p[1]]
		if a.n == 0 || b.n == 0 {
			continue
		}
		fmt.Fprintf(w, "hone %s / %s: %.2f× tokens/s, RSS %.2f / %.2f GB\n", p[0], p[1], a.median/b.median,
			float64(a.rss)/1e9, float64(b.rss)/1e9)
	}
}

func torchArgs(r row, o Options) []string {
	th := fmt.Sprint(o.TorchThreads)
	if r.train {
		return []string{"bench-train", "--shape", r.shape, "--batch", fmt.Sprint(o.Batch), "--seq", fmt.Sprint(o.Seq),
			"--steps", fmt.Sprint(o.Steps), "--threads", th, "--autocast", map[bool]string{false: "0", true: "1"}[r.compute]}
	}
	return []string{"bench-decode", "--shape", r.shape, "--batch", fmt.Sprint(r.batch), "--prompt", fmt.Sprint(o.Prompt),
		"--tokens", fmt.Sprint(o.Tokens), "--dtype", dtype(r), "--threads", th}
}

func dtype(r row) string {
	if r.bf16 {
		return "bf16"
	}
	return "f32"
}

// runChild runs one measurement and reads its "BENCH {json}" line and its
// peak RSS (ru_maxrss is in KiB on Linux).
func runChild(ctx context.Context, bin string, args, env []string) result {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res result
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.RSS = int64(ru.Maxrss) * 1024
		}
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		res.Err = fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, msg)
		return res
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	found := false
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "BENCH "); ok {
			if err := json.Unmarshal([]byte(l), &res); err != nil {
				res.Err = fmt.Errorf("%s: bad BENCH line %q: %w", filepath.Base(bin), l, err)
				return res
			}
			found = true
		}
	}
	if !found {
		res.Err = fmt.Errorf("%s %s: no BENCH line in its output", filepath.Base(bin), strings.Join(args, " "))
	}
	return res
}

// findReference looks for testdata/golden/model/reference.py in the working
// directory and its parents (go run starts in the caller's directory).
func findReference() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding reference.py: %w", err)
	}
	for {
		p := filepath.Join(dir, "testdata", "golden", "model", "reference.py")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("testdata/golden/model/reference.py not found above the working directory; pass --reference")
		}
		dir = up
	}
}

func blasEnv() string {
	var kv []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "OPENBLAS_") || strings.HasPrefix(e, "OMP_NUM_THREADS=") || strings.HasPrefix(e, "GOTO") {
			kv = append(kv, e)
		}
	}
	sort.Strings(kv)
	if len(kv) == 0 {
		return "(no OPENBLAS_* set)"
	}
	return strings.Join(kv, " ")
}

func envOr(env []string, k string) string {
	v := ""
	for _, e := range env {
		if s, ok := strings.CutPrefix(e, k+"="); ok {
			v = s
		}
	}
	return v
}

// gemmPeak is the best of three timed square SGEMMs on kernels/cpu's
// default GEMM, after one warm-up.
func gemmPeak(ctx context.Context, n int) (float64, error) {
	be, err := cpu.New(cpu.Options{})
	if err != nil {
		return 0, fmt.Errorf("GEMM peak: %w", err)
	}
	defer be.Close()
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i] = float32(i%17) * 0.01
		b[i] = float32(i%13) * 0.01
	}
	best := 0.0
	for i := range 4 {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		t := time.Now()
		be.Matmul(c, a, b, n, n, n, false, false, 0)
		if s := time.Since(t).Seconds(); i > 0 {
			best = max(best, 2*float64(n)*float64(n)*float64(n)/s/1e9)
		}
	}
	return best, nil
}
