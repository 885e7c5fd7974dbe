package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/hugepage"
)

// Options of one benchmark run.
type Options struct {
	Reps         int    // timed repetitions per figure (best is reported)
	Squares      []int  // sizes of the square GEMMs
	Tokens       []int  // T of the model-shape GEMMs
	DecodeLayers int    // layers of the 0.5B decode pass (0 skips it)
	Quick        bool   // small sizes, for a smoke run
	GEMMs        string // comma-separated contenders: openblas, gonum
	Sections     string // comma-separated: squares, mlp, output, decode
	Vocab        int    // output-layer width (151936 for Qwen2.5)
	Workers      int    // kernel workers of each backend (0: GOMAXPROCS)
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Reps, "reps", 3, "timed repetitions per figure; the best is reported")
	fs.IntSliceVar(&o.Squares, "squares", []int{512, 1024, 2048}, "sizes of square SGEMMs")
	fs.IntSliceVar(&o.Tokens, "tokens", []int{1, 64, 512}, "rows T of the model-shape products")
	fs.IntVar(&o.DecodeLayers, "decode-layers", 24, "layers in the 0.5B decode pass (0 skips it)")
	fs.BoolVar(&o.Quick, "quick", false, "small sizes and one layer, for a smoke run")
	fs.StringVar(&o.GEMMs, "gemm", "openblas,gonum", "contenders (gonum only without cgo)")
	fs.IntVar(&o.Vocab, "vocab", 151936, "vocabulary size of the output layer")
	fs.StringVar(&o.Sections, "sections", "squares,mlp,output,decode,bf16", "which measurements to run")
}

func main() {
	var o Options
	fs := pflag.NewFlagSet("gemmbench", pflag.ContinueOnError)
	o.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "gemmbench: SGEMM GFLOP/s of OpenBLAS vs gonum on squares and Qwen2.5-0.5B shapes\n\n"+
			"example: go run ./internal/bench/gemmbench --quick\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	o.Workers = cpu.SpareProc(0) // as the hone binaries do
	err := Run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gemmbench:", err)
		os.Exit(1)
	}
}

// Run measures and writes a report to w.
func Run(ctx context.Context, o Options, w io.Writer) error {
	if o.Quick {
		o.Squares, o.Tokens, o.DecodeLayers = []int{256}, []int{1, 16}, 1
		o.Reps = max(o.Reps, 1)
	}
	if o.Reps < 1 {
		return fmt.Errorf("--reps %d: need at least 1", o.Reps)
	}
	fmt.Fprintf(w, "BLAS environment: %s GOMAXPROCS=%d workers=%d\n", blasEnv(), runtime.GOMAXPROCS(0), o.Workers)
	var backends []*cpu.Backend
	for _, g := range strings.Split(o.GEMMs, ",") {
		b, err := cpu.New(cpu.Options{GEMM: strings.TrimSpace(g), Workers: o.Workers})
		if err != nil {
			return fmt.Errorf("contender %q: %w", g, err)
		}
		defer b.Close()
		backends = append(backends, b)
	}
	m := meter{ctx: ctx, reps: o.Reps, w: w}
	r := rand.New(rand.NewPCG(1, 2))

	want := map[string]bool{}
	for _, s := range strings.Split(o.Sections, ",") {
		switch s = strings.TrimSpace(s); s {
		case "squares", "mlp", "output", "decode", "bf16":
			want[s] = true
		default:
			return fmt.Errorf("--sections: unknown section %q (want squares, mlp, output, decode, bf16)", s)
		}
	}
	if !want["squares"] {
		o.Squares = nil
	}
	mlpTokens := o.Tokens
	if !want["mlp"] {
		mlpTokens = nil
	}
	if !want["decode"] {
		o.DecodeLayers = 0
	}

	if len(o.Squares) > 0 {
		fmt.Fprintln(w, "\n# square SGEMM C[n,n] = A[n,n]·B[n,n]")
	}
	for _, n := range o.Squares {
		a, bm, c := randn(r, n*n), randn(r, n*n), make([]float32, n*n)
		for _, b := range backends {
			m.gflops(fmt.Sprintf("n=%d %s", n, b.Name()), 2*float64(n)*float64(n)*float64(n), func() {
				b.Matmul(c, a, bm, n, n, n, false, false, 0)
			})
		}
	}

	const C, I = 896, 4864
	if len(mlpTokens) > 0 {
		fmt.Fprintln(w, "\n# MLP up/gate: out[T,4864] = x[T,896]·W[4864,896]ᵀ (LinearForward; T ≤ 4 uses the gemv kernel, not the GEMM)")
	}
	var wMLP []float32
	if len(mlpTokens) > 0 {
		wMLP = randn(r, I*C)
	}
	for _, T := range mlpTokens {
		x, out := randn(r, T*C), make([]float32, T*I)
		for _, b := range backends {
			m.gflops(fmt.Sprintf("T=%d %s", T, b.Name()), 2*float64(T)*C*I, func() {
				b.LinearForward(out, x, wMLP, nil, T, C, I)
			})
		}
	}
	wMLP = nil

	vocab := o.Vocab
	if o.Quick || vocab <= 0 {
		vocab = 8192
	}
	outTokens := o.Tokens
	if !want["output"] {
		outTokens = nil
	}
	if len(outTokens) > 0 {
		fmt.Fprintf(w, "\n# output layer, V=%d: logits in 4096-column chunks (GEMM only), and fused LogprobForward\n", vocab)
	}
	wOut := hugeRandn(r, vocab*C)
	for _, T := range outTokens {
		x := randn(r, T*C)
		z := make([]float32, T*kernels.DefaultLogprobChunk)
		tg := make([]int32, T)
		lp, ent, lse := make([]float32, T), make([]float32, T), make([]float32, T)
		for _, b := range backends {
			m.gflops(fmt.Sprintf("T=%d %s chunked GEMM", T, b.Name()), 2*float64(T)*C*float64(vocab), func() {
				for v0 := 0; v0 < vocab; v0 += kernels.DefaultLogprobChunk {
					cs := min(kernels.DefaultLogprobChunk, vocab-v0)
					b.LinearForward(z[:T*cs], x, wOut[v0*C:(v0+cs)*C], nil, T, C, cs)
				}
			})
			m.gflops(fmt.Sprintf("T=%d %s LogprobForward", T, b.Name()), 2*float64(T)*C*float64(vocab), func() {
				b.LogprobForward(lp, ent, lse, nil, x, wOut, tg, T, C, vocab, 0)
			})
		}
	}

	if o.DecodeLayers > 0 {
		if err := decode(m, r, backends[0], o.DecodeLayers, wOut, vocab); err != nil {
			return err
		}
	}
	if want["bf16"] {
		bf16Compute(m, r, o)
	}
	return ctx.Err()
}

// bf16Compute times the products on a bfloat16 weight of the 0.5B MLP
// shape (up/gate forward, and the backward to the activation) with float32
// compute and with bf16 compute (issue #23) on each bfloat16 micro-kernel
// this CPU has (AMX, AVX512-BF16), side by side, at decode and training row
// counts. A kernel the CPU lacks is named with why, and not measured.
func bf16Compute(m meter, r *rand.Rand, o Options) {
	const C, I = 896, 4864
	fmt.Fprintln(m.w, "\n# bf16 compute: x[T,896]·W[4864,896]ᵀ and dx[T,896] += dout[T,4864]·W, W bfloat16 (LinearForwardBF16, LinearBackwardBF16)")
	f32, err := cpu.New(cpu.Options{Workers: o.Workers})
	if err != nil {
		fmt.Fprintf(m.w, "skipped: %v\n", err)
		return
	}
	defer f32.Close()
	backends := []*cpu.Backend{f32}
	for _, kernel := range []string{"amx", "avx512bf16"} {
		b16, err := cpu.New(cpu.Options{Workers: o.Workers, Compute: kernels.PrecisionBF16, BF16Kernel: kernel})
		if err != nil {
			fmt.Fprintf(m.w, "bf16 kernel %s skipped: %v\n", kernel, err)
			continue
		}
		defer b16.Close()
		backends = append(backends, b16)
	}
	if len(backends) == 1 {
		return
	}
	w := make([]uint16, I*C)
	kernels.ToBF16(w, randn(r, I*C))
	tokens := []int{8, 32, 256, 512, 2048}
	if o.Quick {
		tokens = []int{8, 64}
	}
	for _, T := range tokens {
		x, out, dout, dx := randn(r, T*C), make([]float32, T*I), randn(r, T*I), make([]float32, T*C)
		for _, b := range backends {
			m.gflops(fmt.Sprintf("T=%d %s forward", T, b.Name()), 2*float64(T)*C*I, func() {
				b.LinearForwardBF16(out, x, w, nil, T, C, I)
			})
			m.gflops(fmt.Sprintf("T=%d %s backward dx", T, b.Name()), 2*float64(T)*C*I, func() {
				b.LinearBackwardBF16(dx, dout, w, T, C, I)
			})
		}
	}
}

// decode applies every weight matrix of the Qwen2.5-0.5B shape to one token
// (N = 1), with float32 and then bfloat16 weights: the matmul part of one
// decode step, memory bound, so tokens/s ≈ bandwidth / weight bytes.
func decode(m meter, r *rand.Rand, b *cpu.Backend, layers int, wOut []float32, vocab int) error {
	const C, KV, I = 896, 128, 4864
	shapes := [][2]int{{C, C}, {KV, C}, {KV, C}, {C, C}, {I, C}, {I, C}, {C, I}} // q k v o gate up down: [OC, C]
	type mat struct {
		f32     []float32
		bf      []uint16
		oc, inC int
	}
	var mats []mat
	var bytes32 float64
	for l := 0; l < layers; l++ {
		for _, s := range shapes {
			f := hugeRandn(r, s[0]*s[1])
			h := make([]uint16, len(f))
			hugepage.Uint16s(h)
			kernels.ToBF16(h, f)
			mats = append(mats, mat{f, h, s[0], s[1]})
			bytes32 += 4 * float64(len(f))
		}
	}
	hOut := make([]uint16, len(wOut))
	hugepage.Uint16s(hOut)
	kernels.ToBF16(hOut, wOut)
	mats = append(mats, mat{wOut, hOut, vocab, C})
	bytes32 += 4 * float64(len(wOut))
	x, out := randn(r, I), make([]float32, vocab)
	fmt.Fprintf(m.w, "\n# decode pass, %d layers of Qwen2.5-0.5B + lm_head (V=%d), one token, %s: %.2f GB f32 / %.2f GB bf16 of weights\n",
		layers, vocab, b.Name(), bytes32/1e9, bytes32/2e9)
	for _, dt := range []string{"float32", "bfloat16"} {
		best := m.best(func() {
			for _, w := range mats {
				if dt == "float32" {
					b.LinearForward(out[:w.oc], x[:w.inC], w.f32, nil, 1, w.inC, w.oc)
				} else {
					b.LinearForwardBF16(out[:w.oc], x[:w.inC], w.bf, nil, 1, w.inC, w.oc)
				}
			}
		})
		if best == 0 {
			return m.ctx.Err()
		}
		gb := bytes32 / 1e9
		if dt == "bfloat16" {
			gb /= 2
		}
		fmt.Fprintf(m.w, "%-10s %8.1f ms/token  %6.1f tokens/s (matmuls only)  %5.1f GB/s\n",
			dt, best.Seconds()*1e3, 1/best.Seconds(), gb/best.Seconds())
	}
	return nil
}

// meter times functions: one warm-up, then the best of reps runs.
type meter struct {
	ctx  context.Context
	reps int
	w    io.Writer
}

func (m meter) best(f func()) time.Duration {
	if m.ctx.Err() != nil {
		return 0
	}
	f()
	var best time.Duration
	for i := 0; i < m.reps && m.ctx.Err() == nil; i++ {
		t0 := time.Now()
		f()
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
	}
	return best
}

func (m meter) gflops(label string, flop float64, f func()) {
	d := m.best(f)
	if d == 0 {
		return
	}
	fmt.Fprintf(m.w, "%-44s %9.3f ms  %7.1f GFLOP/s\n", label, d.Seconds()*1e3, flop/d.Seconds()/1e9)
}

// blasEnv lists the OPENBLAS_* variables of this process (or says none).
func blasEnv() string {
	var kv []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "OPENBLAS_") || strings.HasPrefix(e, "OMP_") || strings.HasPrefix(e, "GOTO_") {
			kv = append(kv, e)
		}
	}
	if len(kv) == 0 {
		return "(no OPENBLAS_*/OMP_* variables set: auto-detect)"
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// hugeRandn is randn on memory advised onto huge pages before it is
// written, as train/model places its weights: the decode pass then reads
// weights the way a model's decode does (per matrix here, so the edges of
// the small k/v matrices stay on 4 KiB pages).
func hugeRandn(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	hugepage.Float32s(x)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func randn(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}
