package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// Tolerances by weight dtype (relative, see the package doc); the compute
// precision's classes are kernels.Precision.Tolerance.
const (
	F32Tol  = kernels.F32Tol
	BF16Tol = 2e-2
)

// Run checks backend b against kernels/ref. Each op is a subtest named after
// it, each shape a subtest named by its sizes (for example "B=2,T=17").
func Run(t *testing.T, b kernels.Backend) {
	t.Helper()
	s := newSuite(b)
	for _, g := range s.groups() {
		t.Run(g.name, g.run)
		s.m.free()
	}
}

// RunOps is Run on the named groups only (Run's subtest names: "RMSNorm",
// "RoPE", "Elementwise", …), for a backend that implements some ops itself
// and leaves the others to ref, so that only its own are checked. A name
// that is no group fails t.
func RunOps(t *testing.T, b kernels.Backend, ops ...string) {
	t.Helper()
	s := newSuite(b)
	groups := s.groups()
	for _, op := range ops {
		found := false
		for _, g := range groups {
			if g.name == op {
				t.Run(g.name, g.run)
				s.m.free()
				found = true
			}
		}
		if !found {
			t.Errorf("kerneltest.RunOps: no group %q", op)
		}
	}
}

func newSuite(b kernels.Backend) suite {
	return suite{b: b, r: ref.New(), p: kernels.PrecisionOf(b), m: &mem{b: b}}
}

// group is one subtest of the suite; its buffers are freed when it ends.
type group struct {
	name string
	run  func(*testing.T)
}

// groups are the suite's subtests, in Run's order.
func (s suite) groups() []group {
	return []group{
		{"Matmul", s.matmul},
		{"MatmulBatched", s.matmulBatched},
		{"Linear", s.linear},
		{"LinearBF16", s.linearBF16},
		{"RMSNorm", s.rmsnorm},
		{"RoPE", s.rope},
		{"SwiGLU", s.swiglu},
		{"GeGLU", s.geglu},
		{"Attention", s.attention},
		{"AttentionWindow", s.attentionWindow},
		{"AttentionDecode", s.attentionDecode},
		{"AttentionDecodeBatch", s.attentionDecodeBatch},
		{"Embedding", s.embedding},
		{"LogSoftmax", s.logsoftmax},
		{"Entropy", s.entropy},
		{"Logprob", s.logprob},
		{"LogprobBF16", s.logprobBF16},
		{"AdamW", s.adamw},
		{"Elementwise", s.elementwise},
		{"CopyZero", s.copyZero},
		{"Rows", s.rows},
		{"BadArguments", s.badArguments},
		{"CopyToHost", s.copyToHost},
	}
}

type suite struct {
	b kernels.Backend
	r ref.Backend
	p kernels.Precision // the backend's compute precision
	m *mem              // every buffer the ops see comes from here
}

// act returns the activation operand of a product with a frozen bfloat16
// weight as the backend's precision sees it: x itself in PrecisionF32,
// rounded to bfloat16 in PrecisionBF16, so that ref on act(x) is the
// backend's arithmetic up to the order of float32 sums.
func (s suite) act(x []float32) []float32 {
	if s.p != kernels.PrecisionBF16 {
		return x
	}
	y := s.m.zeros(len(x))
	for i, f := range x {
		y[i] = kernels.F32(kernels.BF16(f))
	}
	return y
}

// derived is the tolerance for a result that passes through a second
// product with the bfloat16 weight whose operand the backend computes itself
// (expect's softmax, logprob's dz): F32-class tol in PrecisionF32, the
// mode's own error bound otherwise (the suite cannot round that operand).
func (s suite) derived(tol float64) float64 {
	if _, loose := s.p.Tolerance(); loose > tol {
		return loose
	}
	return tol
}

// src returns the seeded source of one subtest: the same name always draws
// the same numbers, whatever runs before it.
func src(name string) *rand.Rand {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(h, 0x686f6e65))
}

func (s suite) randn(r *rand.Rand, n int, scale float64) []float32 {
	x := s.m.zeros(n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func clone[T any](x []T) []T { return append([]T(nil), x...) }

// clone copies x into the backend's memory.
func (s suite) clone(x []float32) []float32 { return s.m.of(x) }

func (s suite) bf16(x []float32) []uint16 {
	h := s.m.zeros16(len(x))
	kernels.ToBF16(h, x)
	return h
}

func (s suite) nan(n int) []float32 {
	x := s.m.zeros(n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return x
}

// near fails t unless got matches want elementwise within tol·(|want|+rms(want)).
func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var ss float64
	for _, w := range want {
		ss += float64(w) * float64(w)
	}
	rms := math.Sqrt(ss / math.Max(1, float64(len(want))))
	bad, worst, at := 0, 0.0, -1
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		lim := tol * (math.Abs(w) + rms + 1e-30)
		e := math.Abs(g - w)
		if !(e <= lim) { // NaN fails too
			bad++
			if r := e / lim; !(r <= worst) {
				worst, at = r, i
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values off (tol %g); worst at [%d]: got %g, want %g",
			what, bad, len(want), tol, at, got[at], want[at])
	}
}

// matmul checks Matmul at F32Tol, or in PrecisionBF16 at the mode's loose
// bound: a backend may run the mode's float32 products on TF32 tensor
// cores (operands rounded to 10 mantissa bits, float32 accumulation), as
// CUDA's does; its error is about an eighth of bfloat16 rounding's.
func (s suite) matmul(t *testing.T) {
	tol := F32Tol
	if s.p == kernels.PrecisionBF16 {
		_, tol = s.p.Tolerance()
	}
	// {8, 70, 67} and {67, 8, 70}: a LoRA rank against a long and a wide
	// side, which a backend may run as a skinny product (kernels/cpu).
	for _, sh := range [][3]int{{1, 1, 1}, {2, 3, 5}, {17, 5, 3}, {1, 64, 33}, {33, 65, 17}, {64, 96, 128}, {8, 70, 67}, {67, 8, 70}} {
		M, N, K := sh[0], sh[1], sh[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, beta := range []float32{0, 1, 0.5} {
					name := fmt.Sprintf("M=%d,N=%d,K=%d,tA=%v,tB=%v,beta=%g", M, N, K, tA, tB, beta)
					t.Run(name, func(t *testing.T) {
						r := src(name)
						a, b := s.randn(r, M*K, 1), s.randn(r, K*N, 1)
						c := s.randn(r, M*N, 1)
						if beta == 0 {
							c = s.nan(M * N) // beta 0 must ignore c
						}
						want := s.clone(c)
						s.r.Matmul(want, a, b, M, N, K, tA, tB, beta)
						got := s.clone(c)
						s.b.Matmul(got, a, b, M, N, K, tA, tB, beta)
						near(t, "c", got, want, tol)
					})
				}
			}
		}
	}
}

func (s suite) matmulBatched(t *testing.T) {
	for _, sh := range [][4]int{{1, 2, 3, 5}, {3, 17, 5, 3}, {7, 4, 16, 9}} {
		bt, M, N, K := sh[0], sh[1], sh[2], sh[3]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				name := fmt.Sprintf("batch=%d,M=%d,N=%d,K=%d,tA=%v,tB=%v", bt, M, N, K, tA, tB)
				t.Run(name, func(t *testing.T) {
					r := src(name)
					a, b, c := s.randn(r, bt*M*K, 1), s.randn(r, bt*K*N, 1), s.randn(r, bt*M*N, 1)
					want, got := s.clone(c), s.clone(c)
					s.r.MatmulBatched(want, a, b, bt, M, N, K, tA, tB, 1)
					s.b.MatmulBatched(got, a, b, bt, M, N, K, tA, tB, 1)
					near(t, "c", got, want, F32Tol)
				})
			}
		}
	}
}

// linearShapes are [N, C, OC] for the Linear ops: decode batches 1..33 and
// past 64 (where a backend may switch from a few-rows kernel to GEMM), rows
// OC not a multiple of 4 or 16, C below, at and past the vector widths and
// past 1024 (a column-chunk edge).
var linearShapes = [][3]int{{1, 3, 5}, {2, 8, 1}, {1, 17, 33}, {3, 31, 7}, {5, 16, 18}, {8, 1025, 13},
	{17, 32, 48}, {32, 100, 37}, {33, 64, 17}, {64, 33, 6}, {65, 48, 5}, {130, 70, 8}}

func (s suite) linear(t *testing.T) {
	for _, sh := range linearShapes {
		N, C, OC := sh[0], sh[1], sh[2]
		for _, withBias := range []bool{false, true} {
			name := fmt.Sprintf("N=%d,C=%d,OC=%d,bias=%v", N, C, OC, withBias)
			t.Run(name, func(t *testing.T) {
				r := src(name)
				inp, w := s.randn(r, N*C, 1), s.randn(r, OC*C, 0.3)
				var bias []float32
				if withBias {
					bias = s.randn(r, OC, 1)
				}
				want, got := s.nan(N*OC), s.nan(N*OC)
				s.r.LinearForward(want, inp, w, bias, N, C, OC)
				s.b.LinearForward(got, inp, w, bias, N, C, OC)
				near(t, "out", got, want, F32Tol)

				dout := s.randn(r, N*OC, 1)
				dinp, dw, db := s.randn(r, N*C, 1), s.randn(r, OC*C, 1), s.randn(r, OC, 1)
				wdi, wdw, wdb := s.clone(dinp), s.clone(dw), s.clone(db)
				s.r.LinearBackward(wdi, wdw, wdb, dout, inp, w, N, C, OC)
				gdi, gdw, gdb := s.clone(dinp), s.clone(dw), s.clone(db)
				s.b.LinearBackward(gdi, gdw, gdb, dout, inp, w, N, C, OC)
				near(t, "dinp", gdi, wdi, F32Tol)
				near(t, "dweight", gdw, wdw, F32Tol)
				near(t, "dbias", gdb, wdb, F32Tol)

				// nil gradients are skipped: only dinp, as for a frozen weight.
				gdi = s.clone(dinp)
				s.b.LinearBackward(gdi, nil, nil, dout, inp, w, N, C, OC)
				near(t, "dinp (frozen weight)", gdi, wdi, F32Tol)
			})
		}
	}
}

func (s suite) linearBF16(t *testing.T) {
	// Past 64 rows a backend may run a GEMM on the bfloat16 weight: panels
	// of 32 output rows, 8×8 transposes and 256-deep k blocks. From 32 rows
	// a decode kernel may take whole panels of 32 inputs (an even C) and
	// the rest another way.
	for _, sh := range append([][3]int{{1, 64, 33}, {4, 130, 70}, {65, 300, 70}, {130, 37, 290}, {70, 520, 33},
		{32, 96, 50}, {40, 130, 61}, {64, 258, 13}, {33, 37, 20}}, linearShapes...) {
		N, C, OC := sh[0], sh[1], sh[2]
		name := fmt.Sprintf("N=%d,C=%d,OC=%d", N, C, OC)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			inp, w, bias := s.randn(r, N*C, 1), s.randn(r, OC*C, 0.3), s.randn(r, OC, 1)
			wh := s.bf16(w)
			want, got := s.nan(N*OC), s.nan(N*OC)
			s.r.LinearForwardBF16(want, s.act(inp), wh, bias, N, C, OC)
			s.b.LinearForwardBF16(got, inp, wh, bias, N, C, OC)
			near(t, "out", got, want, F32Tol)
			full := s.nan(N * OC)
			s.r.LinearForward(full, inp, w, bias, N, C, OC)
			near(t, "out vs float32 weights", got, full, max(BF16Tol, s.derived(0)))

			dout, dinp := s.randn(r, N*OC, 1), s.randn(r, N*C, 1)
			wdi, gdi := s.clone(dinp), s.clone(dinp)
			s.r.LinearBackwardBF16(wdi, s.act(dout), wh, N, C, OC)
			s.b.LinearBackwardBF16(gdi, dout, wh, N, C, OC)
			near(t, "dinp", gdi, wdi, F32Tol)
			if s.p == kernels.PrecisionBF16 {
				fdi := s.clone(dinp)
				s.r.LinearBackward(fdi, nil, nil, dout, nil, w, N, C, OC)
				near(t, "dinp vs float32", gdi, fdi, s.derived(0))
			}
		})
	}
}

func (s suite) rmsnorm(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {2, 7}, {17, 64}, {5, 896}} {
		N, C := sh[0], sh[1]
		name := fmt.Sprintf("N=%d,C=%d", N, C)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			inp, w := s.randn(r, N*C, 2), s.randn(r, C, 1)
			const eps = 1e-6
			wo, wr := s.nan(N*C), s.nan(N)
			s.r.RMSNormForward(wo, wr, inp, w, N, C, eps)
			go_, gr := s.nan(N*C), s.nan(N)
			s.b.RMSNormForward(go_, gr, inp, w, N, C, eps)
			near(t, "out", go_, wo, F32Tol)
			near(t, "rstd", gr, wr, F32Tol)

			dout, dinp, dw := s.randn(r, N*C, 1), s.randn(r, N*C, 1), s.randn(r, C, 1)
			wdi, wdw := s.clone(dinp), s.clone(dw)
			s.r.RMSNormBackward(wdi, wdw, dout, wr, inp, w, N, C)
			gdi, gdw := s.clone(dinp), s.clone(dw)
			s.b.RMSNormBackward(gdi, gdw, dout, wr, inp, w, N, C)
			near(t, "dinp", gdi, wdi, F32Tol)
			near(t, "dweight", gdw, wdw, F32Tol)
			gdi = s.clone(dinp)
			s.b.RMSNormBackward(gdi, nil, dout, wr, inp, w, N, C)
			near(t, "dinp (no dweight)", gdi, wdi, F32Tol)
		})
	}
}

func (s suite) rope(t *testing.T) {
	for _, sh := range [][4]int{{1, 1, 2, 2}, {2, 3, 8, 8}, {17, 3, 10, 6}, {17, 2, 64, 64}, {5, 7, 16, 4}} {
		N, H, D, R := sh[0], sh[1], sh[2], sh[3]
		for _, scaling := range []string{"default", "llama3"} {
			name := fmt.Sprintf("N=%d,H=%d,D=%d,R=%d,%s", N, H, D, R, scaling)
			t.Run(name, func(t *testing.T) {
				r := src(name)
				cfg := kernels.RoPEConfig{Theta: 10000, HeadDim: D, RotaryDim: R, Scaling: scaling,
					Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 64}
				hostInv, err := kernels.RoPEInvFreq(cfg)
				if err != nil {
					t.Fatal(err)
				}
				inv := s.clone(hostInv)
				pos := make([]int32, N)
				for i := range pos {
					pos[i] = int32(r.IntN(5000)) // packed or decode positions, any order
				}
				inp := s.randn(r, N*H*D, 1)
				want, got := s.nan(N*H*D), s.nan(N*H*D)
				s.r.RoPEForward(want, inp, pos, inv, N, H, D)
				s.b.RoPEForward(got, inp, pos, inv, N, H, D)
				near(t, "out", got, want, F32Tol)
				inPlace := s.clone(inp)
				s.b.RoPEForward(inPlace, inPlace, pos, inv, N, H, D)
				near(t, "out (in place)", inPlace, want, F32Tol)

				dout, dinp := s.randn(r, N*H*D, 1), s.randn(r, N*H*D, 1)
				wd, gd := s.clone(dinp), s.clone(dinp)
				s.r.RoPEBackward(wd, dout, pos, inv, N, H, D)
				s.b.RoPEBackward(gd, dout, pos, inv, N, H, D)
				near(t, "dinp", gd, wd, F32Tol)

				// A rotation keeps every head's norm.
				for i := 0; i < N*H; i++ {
					a, b := norm(inp[i*D:(i+1)*D]), norm(got[i*D:(i+1)*D])
					if math.Abs(a-b) > 1e-5*a {
						t.Fatalf("head %d: norm %g after rotation, %g before", i, b, a)
					}
				}
			})
		}
	}
}

func norm(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

func (s suite) swiglu(t *testing.T) {
	s.gated(t, kernels.Backend.SwiGLUForward, kernels.Backend.SwiGLUBackward)
}

// geglu checks GeGLU on gates far into both tails (tanh saturates) and
// around zero.
func (s suite) geglu(t *testing.T) {
	s.gated(t, kernels.Backend.GeGLUForward, kernels.Backend.GeGLUBackward)
}

// gated checks a gated unit (out = act(gate)·up) and its backward against
// ref, with gates of standard deviation 3 so the activation's tails are hit.
func (s suite) gated(t *testing.T,
	forward func(b kernels.Backend, out, gate, up []float32, n int),
	backward func(b kernels.Backend, dgate, dup, dout, gate, up []float32, n int)) {
	for _, n := range []int{1, 17, 1000, 70001} {
		name := fmt.Sprintf("n=%d", n)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			gate, up := s.randn(r, n, 3), s.randn(r, n, 1)
			want, got := s.nan(n), s.nan(n)
			forward(s.r, want, gate, up, n)
			forward(s.b, got, gate, up, n)
			near(t, "out", got, want, F32Tol)
			dout, dg, du := s.randn(r, n, 1), s.randn(r, n, 1), s.randn(r, n, 1)
			wdg, wdu, gdg, gdu := s.clone(dg), s.clone(du), s.clone(dg), s.clone(du)
			backward(s.r, wdg, wdu, dout, gate, up, n)
			backward(s.b, gdg, gdu, dout, gate, up, n)
			near(t, "dgate", gdg, wdg, F32Tol)
			near(t, "dup", gdu, wdu, F32Tol)
		})
	}
}

// attnShape is one attention case: sequence lengths packed in order, heads.
type attnShape struct {
	lens      []int
	H, KVH, D int
}

func (a attnShape) name() string {
	if len(a.lens) == 1 {
		return fmt.Sprintf("B=1,T=%d,H=%d,KVH=%d,D=%d", a.lens[0], a.H, a.KVH, a.D)
	}
	return fmt.Sprintf("B=%d,T=%v,H=%d,KVH=%d,D=%d", len(a.lens), a.lens, a.H, a.KVH, a.D)
}

var attnShapes = []attnShape{
	{[]int{1}, 1, 1, 4},
	{[]int{2}, 2, 1, 4},
	{[]int{17}, 3, 3, 8},
	{[]int{17}, 7, 1, 16},
	{[]int{17, 9}, 4, 2, 8},
	{[]int{5, 1, 3}, 14, 2, 16},
	{[]int{33, 0, 40}, 2, 2, 64},
	// Lengths short of, at and past 64 and 128 (block edges of a backend
	// that takes the causal attention 64 rows at a time), unequal in one
	// batch, GQA groups of 2 and 3; and one sequence with one kv head (a
	// single item: the CPU backend spreads its blocks over the workers).
	{[]int{63, 64, 65, 1, 129}, 4, 2, 16},
	{[]int{128, 130}, 6, 2, 8},
	{[]int{200}, 2, 1, 8},
}

// attnBounds says how an attention case's checks after its forward
// (attnForward) go: rounded when the backend's attention runs on bfloat16
// operands, and v returns v as its products see it.
type attnBounds struct {
	rounded bool
	v       func([]float32) []float32
}

// attnForward checks a backend's attention forward (out, lse) against ref's
// float32 one (wo, wl) and says how the checks that follow go. A backend in
// PrecisionBF16 may run attention on bfloat16 operands, as CUDA's
// tensor-core kernels do (the CPU's keeps float32): q, k, v rounded to
// bfloat16 (s.act) for the scores and P·v, and P rounded for P·v, the
// softmax in float32. Such a backend is told by its lse, which then misses
// ref's float32 lse by far more than F32Tol; its lse must match ref's on
// the rounded q, k, v (fwd) at F32Tol, and out that at the mode's bound
// (P's rounding is the backend's own operand, which the suite cannot
// round: s.derived) and ref's float32 out at the bound looseTo gives. Any
// other backend is held to the float32 bound.
func (s suite) attnForward(t *testing.T, out, lse, wo, wl []float32, fwd func(out, lse, q, k, v []float32), q, k, v []float32) attnBounds {
	t.Helper()
	if s.p != kernels.PrecisionBF16 || within(lse, wl, F32Tol) {
		near(t, "out", out, wo, F32Tol)
		near(t, "lse", lse, wl, F32Tol)
		return attnBounds{v: func(v []float32) []float32 { return v }}
	}
	ro, rl := s.nan(len(wo)), s.nan(len(wl))
	fwd(ro, rl, s.act(q), s.act(k), s.act(v))
	near(t, "lse (bfloat16 q, k)", lse, rl, F32Tol)
	near(t, "out (bfloat16 q, k, v)", out, ro, s.derived(F32Tol))
	near(t, "out vs float32", out, wo, s.looseTo(ro, wo))
	return attnBounds{rounded: true, v: s.act}
}

// attnGrads checks the gradients a backend's attention backward
// accumulated (got: dq, dk, dv) against ref's float32 ones (want): at 1e-4,
// or for a backend on bfloat16 operands against ref's gradients on the
// rounded q, k, v and dout (bwd) at the mode's bound (P and dS are rounded
// too), and against want at the bound looseTo gives.
func (s suite) attnGrads(t *testing.T, a attnBounds, got, want [3][]float32, bwd func(act func([]float32) []float32) [3][]float32) {
	t.Helper()
	var rw [3][]float32
	if a.rounded {
		rw = bwd(s.act)
	}
	for i, name := range []string{"dq", "dk", "dv"} {
		tol := 1e-4
		if a.rounded {
			near(t, name+" (bfloat16 q, k, v, dout)", got[i], rw[i], s.derived(F32Tol))
			tol = s.looseTo(rw[i], want[i])
		}
		near(t, name, got[i], want[i], tol)
	}
}

// looseTo is the bound of a result of the bf16 mode's rounded operands
// against the float32 result (want), given ref's result on the same
// rounded operands (rounded): the mode's bound, or twice the error the
// rounding of the operands alone causes where that is larger (as for a sum
// with cancellation).
func (s suite) looseTo(rounded, want []float32) float64 {
	return max(s.derived(F32Tol), 2*RelErr(rounded, want))
}

// RelErr is the largest |got − want| / (|want| + rms(want)), near's measure
// (+Inf when an element is NaN): the error the suite's tolerances bound.
func RelErr(got, want []float32) float64 {
	var ss float64
	for _, w := range want {
		ss += float64(w) * float64(w)
	}
	rms := math.Sqrt(ss / math.Max(1, float64(len(want))))
	worst := 0.0
	for i := range want {
		e := math.Abs(float64(got[i])-float64(want[i])) / (math.Abs(float64(want[i])) + rms + 1e-30)
		if math.IsNaN(e) {
			return math.Inf(1)
		}
		worst = max(worst, e)
	}
	return worst
}

// within reports whether every element of got is within tol of want by
// near's rule.
func within(got, want []float32, tol float64) bool {
	var ss float64
	for _, w := range want {
		ss += float64(w) * float64(w)
	}
	rms := math.Sqrt(ss / math.Max(1, float64(len(want))))
	for i := range want {
		if e := math.Abs(float64(got[i]) - float64(want[i])); !(e <= tol*(math.Abs(float64(want[i]))+rms+1e-30)) {
			return false
		}
	}
	return true
}

func (s suite) attention(t *testing.T) {
	for _, sh := range attnShapes {
		name := sh.name()
		t.Run(name, func(t *testing.T) {
			r := src(name)
			H, KVH, D := sh.H, sh.KVH, sh.D
			seqOff := []int32{0}
			N := 0
			for _, l := range sh.lens {
				N += l
				seqOff = append(seqOff, int32(N))
			}
			q, k, v := s.randn(r, N*H*D, 1), s.randn(r, N*KVH*D, 1), s.randn(r, N*KVH*D, 1)
			scale := float32(1 / math.Sqrt(float64(D)))
			wo, wl := s.nan(N*H*D), s.nan(N*H)
			s.r.AttentionForward(wo, wl, q, k, v, seqOff, N, H, KVH, D, scale)
			got, gl := s.nan(N*H*D), s.nan(N*H)
			s.b.AttentionForward(got, gl, q, k, v, seqOff, N, H, KVH, D, scale)
			a := s.attnForward(t, got, gl, wo, wl, func(out, lse, q, k, v []float32) {
				s.r.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
			}, q, k, v)

			dout := s.randn(r, N*H*D, 1)
			dq, dk, dv := s.randn(r, N*H*D, 1), s.randn(r, N*KVH*D, 1), s.randn(r, N*KVH*D, 1)
			wdq, wdk, wdv := s.clone(dq), s.clone(dk), s.clone(dv)
			s.r.AttentionBackward(wdq, wdk, wdv, dout, wo, wl, q, k, v, seqOff, N, H, KVH, D, scale)
			gdq, gdk, gdv := s.clone(dq), s.clone(dk), s.clone(dv)
			s.b.AttentionBackward(gdq, gdk, gdv, dout, wo, wl, q, k, v, seqOff, N, H, KVH, D, scale)
			s.attnGrads(t, a, [3][]float32{gdq, gdk, gdv}, [3][]float32{wdq, wdk, wdv}, func(act func([]float32) []float32) [3][]float32 {
				rdq, rdk, rdv := s.clone(dq), s.clone(dk), s.clone(dv)
				s.r.AttentionBackward(rdq, rdk, rdv, act(dout), wo, wl, act(q), act(k), act(v), seqOff, N, H, KVH, D, scale)
				return [3][]float32{rdq, rdk, rdv}
			})

			// The first token of a sequence sees only itself: out = its v
			// (as the backend's products see it).
			g := H / KVH
			va := a.v(v)
			for _, off := range seqOff[:len(seqOff)-1] {
				if int(off) == N {
					continue
				}
				for h := 0; h < H; h++ {
					o := got[(int(off)*H+h)*D : (int(off)*H+h+1)*D]
					vv := va[(int(off)*KVH+h/g)*D : (int(off)*KVH+h/g+1)*D]
					near(t, fmt.Sprintf("first token of sequence at %d, head %d", off, h), o, vv, F32Tol)
				}
			}
		})
	}
}

// attentionWindow checks the sliding-window attention on windows that mask
// (query blocks starting past the window, a window of one key) and one that
// does not, which must equal the causal attention.
func (s suite) attentionWindow(t *testing.T) {
	for _, c := range []struct {
		sh attnShape
		W  int
	}{
		{attnShape{[]int{70, 5, 150}, 4, 2, 8}, 20},
		{attnShape{[]int{130}, 4, 1, 32}, 64},
		{attnShape{[]int{17, 1}, 3, 1, 4}, 1},
		{attnShape{[]int{9, 33}, 2, 2, 16}, 33},
	} {
		name := fmt.Sprintf("%s,W=%d", c.sh.name(), c.W)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			H, KVH, D, W := c.sh.H, c.sh.KVH, c.sh.D, c.W
			seqOff := []int32{0}
			N, longest := 0, 0
			for _, l := range c.sh.lens {
				N += l
				longest = max(longest, l)
				seqOff = append(seqOff, int32(N))
			}
			q, k, v := s.randn(r, N*H*D, 1), s.randn(r, N*KVH*D, 1), s.randn(r, N*KVH*D, 1)
			scale := float32(1 / math.Sqrt(float64(D)))
			wo, wl := s.nan(N*H*D), s.nan(N*H)
			s.r.AttentionWindowForward(wo, wl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			got, gl := s.nan(N*H*D), s.nan(N*H)
			s.b.AttentionWindowForward(got, gl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			a := s.attnForward(t, got, gl, wo, wl, func(out, lse, q, k, v []float32) {
				s.r.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
			}, q, k, v)

			dout := s.randn(r, N*H*D, 1)
			dq, dk, dv := s.randn(r, N*H*D, 1), s.randn(r, N*KVH*D, 1), s.randn(r, N*KVH*D, 1)
			wdq, wdk, wdv := s.clone(dq), s.clone(dk), s.clone(dv)
			s.r.AttentionWindowBackward(wdq, wdk, wdv, dout, wo, wl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			gdq, gdk, gdv := s.clone(dq), s.clone(dk), s.clone(dv)
			s.b.AttentionWindowBackward(gdq, gdk, gdv, dout, wo, wl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			s.attnGrads(t, a, [3][]float32{gdq, gdk, gdv}, [3][]float32{wdq, wdk, wdv}, func(act func([]float32) []float32) [3][]float32 {
				rdq, rdk, rdv := s.clone(dq), s.clone(dk), s.clone(dv)
				s.r.AttentionWindowBackward(rdq, rdk, rdv, act(dout), wo, wl, act(q), act(k), act(v), seqOff, N, H, KVH, D, W, scale)
				return [3][]float32{rdq, rdk, rdv}
			})

			if W >= longest { // masks nothing: the causal attention
				fo, fl := s.nan(N*H*D), s.nan(N*H)
				s.b.AttentionForward(fo, fl, q, k, v, seqOff, N, H, KVH, D, scale)
				near(t, "window vs causal out", got, fo, F32Tol)
				near(t, "window vs causal lse", gl, fl, F32Tol)
			}
			if W == 1 { // each query sees only itself: out = its v (as the products see it)
				g, va := H/KVH, a.v(v)
				for i := range N {
					for h := range H {
						near(t, fmt.Sprintf("token %d head %d", i, h), got[(i*H+h)*D:(i*H+h+1)*D], va[(i*KVH+h/g)*D:(i*KVH+h/g+1)*D], F32Tol)
					}
				}
			}
		})
	}
}

func (s suite) attentionDecode(t *testing.T) {
	// The last ones cross 64-row block edges with queries offset into the
	// cache (Tq < Tk), with one kv head and with GQA.
	for _, sh := range [][5]int{{1, 1, 1, 1, 4}, {1, 17, 14, 2, 16}, {3, 5, 7, 1, 8}, {17, 17, 4, 2, 8}, {2, 300, 2, 1, 64},
		{70, 150, 4, 2, 16}, {64, 100, 3, 1, 8}, {130, 130, 2, 1, 8}, {5, 200, 4, 1, 8}} {
		Tq, Tk, H, KVH, D := sh[0], sh[1], sh[2], sh[3], sh[4]
		name := fmt.Sprintf("Tq=%d,Tk=%d,H=%d,KVH=%d,D=%d", Tq, Tk, H, KVH, D)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			q := s.randn(r, Tq*H*D, 1)
			kc, vc := s.randn(r, (Tk+3)*KVH*D, 1), s.randn(r, (Tk+3)*KVH*D, 1) // spare capacity
			scale := float32(1 / math.Sqrt(float64(D)))
			want, got := s.nan(Tq*H*D), s.nan(Tq*H*D)
			s.r.AttentionDecode(want, q, kc, vc, Tq, Tk, H, KVH, D, scale)
			s.b.AttentionDecode(got, q, kc, vc, Tq, Tk, H, KVH, D, scale)
			near(t, "out", got, want, F32Tol)

			if Tq == Tk { // decode over a full prompt equals training attention
				fo, fl := s.nan(Tq*H*D), s.nan(Tq*H)
				s.b.AttentionForward(fo, fl, q, kc[:Tk*KVH*D], vc[:Tk*KVH*D], []int32{0, int32(Tk)}, Tk, H, KVH, D, scale)
				ro, rl := s.nan(Tq*H*D), s.nan(Tq*H)
				s.r.AttentionForward(ro, rl, q, kc[:Tk*KVH*D], vc[:Tk*KVH*D], []int32{0, int32(Tk)}, Tk, H, KVH, D, scale)
				tol := F32Tol
				if s.p == kernels.PrecisionBF16 && !within(fl, rl, F32Tol) { // the forward rounds its operands
					_, tol = s.p.Tolerance()
				}
				near(t, "decode vs forward", got, fo, tol)
			}
		})
	}
}

// decodeBatchCase is one AttentionDecodeBatch shape: each sequence's new
// tokens and cache rows after the append, heads, head dim and window.
type decodeBatchCase struct {
	tq, tk    []int
	H, KVH, D int
	W         int
}

// attentionDecodeBatch checks AttentionDecodeBatch against ref on several
// sequences of different cache lengths: one new token each (a decode step),
// several (a prompt prefilled over a cache, an empty one among them), GQA
// and a sliding window shorter than some caches. Both the outputs and the
// caches are compared; the rows of each cache's allocation past its slice
// must stay as they were, and without a window the result must equal the
// backend's own AttentionDecode after copying the new rows in.
func (s suite) attentionDecodeBatch(t *testing.T) {
	for _, c := range []decodeBatchCase{
		{tq: []int{1, 1, 1, 1}, tk: []int{5, 17, 1, 64}, H: 14, KVH: 2, D: 16},
		{tq: []int{3, 1, 0, 17}, tk: []int{3, 9, 4, 40}, H: 4, KVH: 2, D: 8},
		{tq: []int{1, 5, 2}, tk: []int{10, 6, 3}, H: 2, KVH: 1, D: 64, W: 4},
		{tq: []int{2, 1}, tk: []int{70, 300}, H: 6, KVH: 3, D: 32, W: 128},
	} {
		name := fmt.Sprintf("Tq=%v,Tk=%v,H=%d,KVH=%d,D=%d,W=%d", c.tq, c.tk, c.H, c.KVH, c.D, c.W)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			H, KVH, D := c.H, c.KVH, c.D
			qd, kvd := H*D, KVH*D
			S := len(c.tq)
			seqOff := make([]int32, S+1)
			for i, n := range c.tq {
				seqOff[i+1] = seqOff[i] + int32(n)
			}
			N := int(seqOff[S])
			q, k, v := s.randn(r, N*qd, 1), s.randn(r, N*kvd, 1), s.randn(r, N*kvd, 1)
			const spare = 2 // rows past each cache slice, which must not change
			kc, vc := make([][]float32, S), make([][]float32, S)
			kw, vw := make([][]float32, S), make([][]float32, S)
			for i, tk := range c.tk {
				kc[i], vc[i] = s.randn(r, (tk+spare)*kvd, 1), s.randn(r, (tk+spare)*kvd, 1)
				kw[i], vw[i] = s.m.of(kc[i]), s.m.of(vc[i])
			}
			cut := func(x [][]float32) [][]float32 {
				y := make([][]float32, S)
				for i, tk := range c.tk {
					y[i] = x[i][:tk*kvd]
				}
				return y
			}
			scale := float32(1 / math.Sqrt(float64(D)))
			want, got := s.nan(N*qd), s.nan(N*qd)
			s.r.AttentionDecodeBatch(want, q, k, v, cut(kw), cut(vw), seqOff, N, H, KVH, D, c.W, scale)
			s.b.AttentionDecodeBatch(got, q, k, v, cut(kc), cut(vc), seqOff, N, H, KVH, D, c.W, scale)
			near(t, "out", got, want, F32Tol)
			for i := range S {
				near(t, fmt.Sprintf("sequence %d key cache", i), kc[i], kw[i], 0)
				near(t, fmt.Sprintf("sequence %d value cache", i), vc[i], vw[i], 0)
			}
			if c.W > 0 {
				return
			}
			for i := range S { // the same as one AttentionDecode per sequence
				lo, hi := int(seqOff[i]), int(seqOff[i+1])
				if hi == lo {
					continue
				}
				one := s.nan((hi - lo) * qd)
				s.b.AttentionDecode(one, q[lo*qd:hi*qd], kc[i], vc[i], hi-lo, c.tk[i], H, KVH, D, scale)
				near(t, fmt.Sprintf("sequence %d vs AttentionDecode", i), got[lo*qd:hi*qd], one, F32Tol)
			}
		})
	}
}

func (s suite) embedding(t *testing.T) {
	for _, sh := range [][3]int{{1, 3, 5}, {17, 8, 50}, {64, 16, 7}} {
		N, C, V := sh[0], sh[1], sh[2]
		name := fmt.Sprintf("N=%d,C=%d,V=%d", N, C, V)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			table := s.randn(r, V*C, 1)
			ids := make([]int32, N)
			for i := range ids {
				ids[i] = int32(r.IntN(V)) // repeats when N > V: scatter-add must sum them
			}
			want, got := s.nan(N*C), s.nan(N*C)
			s.r.EmbeddingForward(want, ids, table, N, C, V)
			s.b.EmbeddingForward(got, ids, table, N, C, V)
			near(t, "out", got, want, 0)
			th := s.bf16(table)
			want16, got16 := s.nan(N*C), s.nan(N*C)
			s.r.EmbeddingForwardBF16(want16, ids, th, N, C, V)
			s.b.EmbeddingForwardBF16(got16, ids, th, N, C, V)
			near(t, "out (bf16)", got16, want16, 0)
			near(t, "out (bf16) vs float32", got16, want, BF16Tol)

			dout, dt := s.randn(r, N*C, 1), s.randn(r, V*C, 1)
			wd, gd := s.clone(dt), s.clone(dt)
			s.r.EmbeddingBackward(wd, dout, ids, N, C, V)
			s.b.EmbeddingBackward(gd, dout, ids, N, C, V)
			near(t, "dtable", gd, wd, F32Tol)
		})
	}
}

var softmaxShapes = [][2]int{{1, 1}, {1, 7}, {3, 300}, {17, 1000}}

func (s suite) logsoftmax(t *testing.T) {
	for _, sh := range softmaxShapes {
		N, V := sh[0], sh[1]
		name := fmt.Sprintf("N=%d,V=%d", N, V)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			inp := s.randn(r, N*V, 4)
			inp[0] = 80 // large logits must not overflow
			want, got := s.nan(N*V), s.nan(N*V)
			s.r.LogSoftmaxForward(want, inp, N, V)
			s.b.LogSoftmaxForward(got, inp, N, V)
			near(t, "out", got, want, F32Tol)
			for n := 0; n < N; n++ { // property: rows exponentiate and sum to 1
				var sum float64
				for _, lp := range got[n*V : (n+1)*V] {
					if lp > 0 {
						t.Fatalf("row %d: log-probability %g > 0", n, lp)
					}
					sum += math.Exp(float64(lp))
				}
				if math.Abs(sum-1) > 1e-5 {
					t.Fatalf("row %d: probabilities sum to %g", n, sum)
				}
			}
			dout, dinp := s.randn(r, N*V, 1), s.randn(r, N*V, 1)
			wd, gd := s.clone(dinp), s.clone(dinp)
			s.r.LogSoftmaxBackward(wd, dout, want, N, V)
			s.b.LogSoftmaxBackward(gd, dout, want, N, V)
			near(t, "dinp", gd, wd, F32Tol)
		})
	}
}

func (s suite) entropy(t *testing.T) {
	for _, sh := range softmaxShapes {
		N, V := sh[0], sh[1]
		name := fmt.Sprintf("N=%d,V=%d", N, V)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			inp := s.randn(r, N*V, 3)
			want, got := s.nan(N), s.nan(N)
			s.r.EntropyForward(want, inp, N, V)
			s.b.EntropyForward(got, inp, N, V)
			near(t, "ent", got, want, F32Tol)
			for n, e := range got {
				if e < -1e-6 || float64(e) > math.Log(float64(V))+1e-5 {
					t.Fatalf("row %d: entropy %g outside [0, log %d]", n, e, V)
				}
			}
			dent, dinp := s.randn(r, N, 1), s.randn(r, N*V, 1)
			wd, gd := s.clone(dinp), s.clone(dinp)
			s.r.EntropyBackward(wd, dent, inp, N, V)
			s.b.EntropyBackward(gd, dent, inp, N, V)
			near(t, "dinp", gd, wd, F32Tol)

			// Masked (−Inf) logits have p = 0 and add nothing (0·log 0 =
			// 0): written out as p·log p they would be 0·(−Inf) = NaN. A
			// third of each row is masked, and all of row 0 but its last.
			for i := range inp {
				if i < V-1 || (i >= V && i%3 == 1) {
					inp[i] = float32(math.Inf(-1))
				}
			}
			s.r.EntropyForward(want, inp, N, V)
			s.b.EntropyForward(got, inp, N, V)
			near(t, "masked ent", got, want, F32Tol)
			wd, gd = s.clone(dinp), s.clone(dinp)
			s.r.EntropyBackward(wd, dent, inp, N, V)
			s.b.EntropyBackward(gd, dent, inp, N, V)
			near(t, "masked dinp", gd, wd, F32Tol)
		})
	}
}

type lpShape struct{ N, C, V, chunk int }

var lpShapes = []lpShape{{1, 4, 7, 0}, {2, 8, 100, 16}, {17, 16, 257, 64}, {5, 32, 1000, 0}, {3, 8, 50, 50}, {4, 8, 33, 1}}

// targetsFor draws targets in [0, V) with one ignored row (−1) when N > 1.
func targetsFor(r *rand.Rand, N, V int) []int32 {
	tg := make([]int32, N)
	for i := range tg {
		tg[i] = int32(r.IntN(V))
	}
	if N > 1 {
		tg[N/2] = -1
	}
	return tg
}

// lpOut holds a logprob forward's results.
type lpOut struct{ lp, ent, lse, ex []float32 }

// checkForwards runs a logprob forward of the reference (with expect) and
// of the backend without and then with expect, checks that all three
// agree, and returns the reference's results and the backend's (its
// logprob, entropy and lse from the run without expect).
func (s suite) checkForwards(t *testing.T, N, C int, exTol float64, ref, b func(lp, ent, lse, ex []float32)) (want, got lpOut) {
	t.Helper()
	want = lpOut{s.nan(N), s.nan(N), s.nan(N), s.nan(N * C)}
	ref(want.lp, want.ent, want.lse, want.ex)
	got = lpOut{s.nan(N), s.nan(N), s.nan(N), nil}
	b(got.lp, got.ent, got.lse, nil)
	withEx := lpOut{s.nan(N), s.nan(N), s.nan(N), s.nan(N * C)}
	b(withEx.lp, withEx.ent, withEx.lse, withEx.ex)
	for _, c := range []struct {
		what      string
		got, want lpOut
	}{{"", got, want}, {" (with expect)", withEx, got}} {
		near(t, "logprob"+c.what, c.got.lp, c.want.lp, F32Tol)
		near(t, "entropy"+c.what, c.got.ent, c.want.ent, F32Tol)
		near(t, "lse"+c.what, c.got.lse, c.want.lse, F32Tol)
	}
	near(t, "expect", withEx.ex, want.ex, exTol)
	got.ex = withEx.ex
	return want, got
}

func (s suite) logprob(t *testing.T) {
	for _, sh := range lpShapes {
		N, C, V, chunk := sh.N, sh.C, sh.V, sh.chunk
		name := fmt.Sprintf("N=%d,C=%d,V=%d,chunk=%d", N, C, V, chunk)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			hid, w := s.randn(r, N*C, 1), s.randn(r, V*C, 0.5)
			tg := targetsFor(r, N, V)
			want, got := s.checkForwards(t, N, C, F32Tol,
				func(lp, ent, lse, ex []float32) { s.r.LogprobForward(lp, ent, lse, ex, hid, w, tg, N, C, V, chunk) },
				func(lp, ent, lse, ex []float32) { s.b.LogprobForward(lp, ent, lse, ex, hid, w, tg, N, C, V, chunk) })
			glp, gent, gex := got.lp, got.ent, got.ex
			went, wlse, wex := want.ent, want.lse, want.ex
			for n := range glp {
				if glp[n] > 0 || (tg[n] < 0 && glp[n] != 0) {
					t.Fatalf("row %d (target %d): logprob %g", n, tg[n], glp[n])
				}
			}
			// Same numbers as the unfused path: logits, then log-softmax and entropy.
			z, ls, ent := s.nan(N*V), s.nan(N*V), s.nan(N)
			s.b.LinearForward(z, hid, w, nil, N, C, V)
			s.b.LogSoftmaxForward(ls, z, N, V)
			s.b.EntropyForward(ent, z, N, V)
			for n := range tg {
				want := float32(0)
				if tg[n] >= 0 {
					want = ls[n*V+int(tg[n])]
				}
				near(t, fmt.Sprintf("row %d logprob vs log-softmax", n), glp[n:n+1], []float32{want}, 1e-4)
			}
			near(t, "entropy vs unfused", gent, ent, 1e-4)

			dlp, dent := s.randn(r, N, 1), s.randn(r, N, 1)
			dh, dw := s.randn(r, N*C, 1), s.randn(r, V*C, 1)
			wdh, wdw, gdh, gdw := s.clone(dh), s.clone(dw), s.clone(dh), s.clone(dw)
			s.r.LogprobBackward(wdh, wdw, dlp, dent, wlse, went, hid, w, tg, N, C, V, chunk)
			s.b.LogprobBackward(gdh, gdw, dlp, dent, wlse, went, hid, w, tg, N, C, V, chunk)
			near(t, "dhidden", gdh, wdh, 1e-4)
			near(t, "dweight", gdw, wdw, 1e-4)
			// nil dweight (frozen lm_head) and nil dentropy.
			wdh, gdh = s.clone(dh), s.clone(dh)
			s.r.LogprobBackward(wdh, nil, dlp, nil, wlse, went, hid, w, tg, N, C, V, chunk)
			s.b.LogprobBackward(gdh, nil, dlp, nil, wlse, went, hid, w, tg, N, C, V, chunk)
			near(t, "dhidden (logprob only)", gdh, wdh, 1e-4)
			// The one-pass form of the same gradient, from expect.
			rdh, edh := s.clone(dh), s.clone(dh)
			s.r.LogprobBackwardExpect(rdh, dlp, wex, w, tg, N, C, V)
			s.b.LogprobBackwardExpect(edh, dlp, gex, w, tg, N, C, V)
			near(t, "dhidden from expect", edh, rdh, 1e-4)
			near(t, "dhidden from expect vs recomputed", edh, wdh, 1e-4)
		})
	}
}

func (s suite) logprobBF16(t *testing.T) {
	for _, sh := range lpShapes {
		N, C, V, chunk := sh.N, sh.C, sh.V, sh.chunk
		name := fmt.Sprintf("N=%d,C=%d,V=%d,chunk=%d", N, C, V, chunk)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			hid, w := s.randn(r, N*C, 1), s.randn(r, V*C, 0.5)
			wh := s.bf16(w)
			tg := targetsFor(r, N, V)
			want, got := s.checkForwards(t, N, C, s.derived(F32Tol),
				func(lp, ent, lse, ex []float32) {
					s.r.LogprobForwardBF16(lp, ent, lse, ex, s.act(hid), wh, tg, N, C, V, chunk)
				},
				func(lp, ent, lse, ex []float32) {
					s.b.LogprobForwardBF16(lp, ent, lse, ex, hid, wh, tg, N, C, V, chunk)
				})
			glse, gex := got.lse, got.ex
			went, wlse, wex := want.ent, want.lse, want.ex
			flp, fent, flse := s.nan(N), s.nan(N), s.nan(N)
			s.r.LogprobForward(flp, fent, flse, nil, hid, w, tg, N, C, V, chunk)
			near(t, "lse vs float32 weights", glse, flse, max(BF16Tol, s.derived(0)))

			dlp, dent, dh := s.randn(r, N, 1), s.randn(r, N, 1), s.randn(r, N*C, 1)
			wdh, gdh := s.clone(dh), s.clone(dh)
			s.r.LogprobBackwardBF16(wdh, dlp, dent, wlse, went, s.act(hid), wh, tg, N, C, V, chunk)
			s.b.LogprobBackwardBF16(gdh, dlp, dent, wlse, went, hid, wh, tg, N, C, V, chunk)
			near(t, "dhidden", gdh, wdh, s.derived(1e-4))
			wdh, gdh = s.clone(dh), s.clone(dh)
			s.b.LogprobBackwardBF16(wdh, dlp, nil, wlse, went, hid, wh, tg, N, C, V, chunk)
			s.b.LogprobBackwardExpectBF16(gdh, dlp, gex, wh, tg, N, C, V)
			near(t, "dhidden from expect vs recomputed", gdh, wdh, s.derived(1e-4))
			rdh := s.clone(dh)
			s.r.LogprobBackwardExpectBF16(rdh, dlp, wex, wh, tg, N, C, V)
			near(t, "dhidden from expect", gdh, rdh, s.derived(1e-4))
		})
	}
}

func (s suite) adamw(t *testing.T) {
	t.Run("hand-computed", func(t *testing.T) {
		// One step from m = v = 0: m̂ = g, v̂ = g², so the update is
		// lr·g/(|g| + eps) after decay: 1·(1 − 0.1·0.01) − 0.1·0.5/(0.5 + 1e-8).
		p, g, m, v := s.clone([]float32{1, -2}), s.clone([]float32{0.5, -0.25}), s.m.zeros(2), s.m.zeros(2)
		s.b.AdamW(p, g, m, v, 2, 1, kernels.AdamWParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01})
		want := []float32{0.999 - 0.1*0.5/(0.5+1e-8), -2*0.999 + 0.1*0.25/(0.25+1e-8)}
		near(t, "param", p, want, 1e-6)
		near(t, "m", m, []float32{0.05, -0.025}, 1e-6)
		near(t, "v", v, []float32{0.00025, 0.0000625}, 1e-5)
	})
	for _, n := range []int{1, 17, 1000, 70001} {
		for _, step := range []int{1, 5} {
			name := fmt.Sprintf("n=%d,step=%d", n, step)
			t.Run(name, func(t *testing.T) {
				r := src(name)
				p, g := s.randn(r, n, 1), s.randn(r, n, 1)
				m, v := s.randn(r, n, 0.1), s.randn(r, n, 0.1)
				for i := range v {
					v[i] *= v[i]
				}
				h := kernels.AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
				wp, wm, wv := s.clone(p), s.clone(m), s.clone(v)
				s.r.AdamW(wp, g, wm, wv, n, step, h)
				gp, gm, gv := s.clone(p), s.clone(m), s.clone(v)
				s.b.AdamW(gp, g, gm, gv, n, step, h)
				near(t, "param", gp, wp, F32Tol)
				near(t, "m", gm, wm, F32Tol)
				near(t, "v", gv, wv, F32Tol)
			})
		}
	}
}

func (s suite) elementwise(t *testing.T) {
	for _, n := range []int{0, 1, 17, 70001} {
		name := fmt.Sprintf("n=%d", n)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			a, b := s.randn(r, n, 1), s.randn(r, n, 1)
			want, got := s.nan(n), s.nan(n)
			s.r.Add(want, a, b, n)
			s.b.Add(got, a, b, n)
			near(t, "Add", got, want, 0)
			alias := s.clone(a)
			s.b.Add(alias, alias, b, n)
			near(t, "Add (out = a)", alias, want, 0)

			s.r.Scale(want, a, 0.37, n)
			s.b.Scale(got, a, 0.37, n)
			near(t, "Scale", got, want, 0)

			o := s.randn(r, n, 1)
			wo, gob := s.clone(o), s.clone(o)
			s.r.AXPY(wo, a, -1.5, n)
			s.b.AXPY(gob, a, -1.5, n)
			near(t, "AXPY", gob, wo, 1e-7)

			s.r.AddScalar(want, a, 1, n)
			s.b.AddScalar(got, a, 1, n)
			near(t, "AddScalar", got, want, 0)
			alias = s.clone(a)
			s.b.AddScalar(alias, alias, 1, n)
			near(t, "AddScalar (out = a)", alias, want, 0)

			ws, gs := s.r.SumSquares(a, n), s.b.SumSquares(a, n)
			if math.Abs(gs-ws) > 1e-12*ws || (n == 0 && gs != 0) {
				t.Errorf("SumSquares = %.17g, want %.17g", gs, ws)
			}
			if n > 0 {
				// Only the first n values count; a non-finite one makes the
				// sum non-finite (the optimizer's finiteness check).
				long := s.clone(append(clone(a), float32(math.NaN())))
				if got := s.b.SumSquares(long, n); got != gs {
					t.Errorf("SumSquares reads past n: %g, want %g", got, gs)
				}
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
					x := s.clone(a)
					x[r.IntN(n)] = bad
					if got := s.b.SumSquares(x, n); !math.IsNaN(got) && !math.IsInf(got, 1) {
						t.Errorf("SumSquares with a %g among the values = %g, want NaN or +Inf", bad, got)
					}
				}
			}
		})
	}
}

// copyZero checks Copy and Zero exactly, and that they touch only the first
// n values of a longer buffer.
func (s suite) copyZero(t *testing.T) {
	for _, n := range []int{0, 1, 17, 70001} {
		name := fmt.Sprintf("n=%d", n)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			src, dst := s.randn(r, n+3, 1), s.randn(r, n+3, 1)
			want := append(s.clone(src[:n]), dst[n:]...)
			s.b.Copy(dst, src, n)
			near(t, "Copy", dst, want, 0)
			for i := range want[:n] {
				want[i] = 0
			}
			s.b.Zero(dst, n)
			near(t, "Zero", dst, want, 0)
			nans := s.nan(n + 3)
			s.b.Zero(nans, n)
			for i, v := range nans {
				if (i < n) != (v == 0) {
					t.Fatalf("Zero over NaN: value %d of %d is %g", i, n+3, v)
				}
			}
		})
	}
}

// rows checks the sampling row ops on lengths around vector widths and a
// full Qwen vocabulary, with masked (−Inf) entries, at the temperatures a
// sampler uses: into another buffer, in place, and for the sum alone; and
// RowMax passing over NaN entries wherever they stand (after the largest
// entry in its vector lane too, and at 0), and giving −Inf for a row of
// NaN.
func (s suite) rows(t *testing.T) {
	inf := float32(math.Inf(-1))
	if m := s.b.RowMax(nil); m != inf {
		t.Fatalf("RowMax of nothing = %g, want -Inf", m)
	}
	nan := float32(math.NaN())
	for _, n := range []int{1, 3, 17, 40, 1000} {
		r := src(fmt.Sprintf("nan%d", n))
		x := s.randn(r, n, 8)
		for i := 0; i < n; i += 16 {
			x[i] = nan // at 0, and every 16-wide step after it
		}
		want := inf
		if n > 3 {
			x[3], x[n-1] = 100, nan // the largest, and NaN last
			if n > 19 {
				x[19] = nan // after the largest in its lane, then finite entries
			}
			want = 100
		} else if n == 3 {
			want = max(x[1], x[2])
		}
		if got := s.b.RowMax(x); got != want {
			t.Fatalf("RowMax of %d entries with NaN = %g, want %g", n, got, want)
		}
		for i := range x {
			x[i] = nan
		}
		if got := s.b.RowMax(x); got != inf {
			t.Fatalf("RowMax of %d NaN = %g, want -Inf", n, got)
		}
	}
	if sum := s.b.ExpShift(nil, nil, 0, 1); sum != 0 {
		t.Fatalf("ExpShift of nothing = %g, want 0", sum)
	}
	for _, n := range []int{1, 2, 15, 16, 17, 33, 1000, 151936} {
		name := fmt.Sprintf("n=%d", n)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			x := s.randn(r, n, 8)
			if n > 1 {
				x[r.IntN(n)] = inf // a masked token
			}
			mu := s.r.RowMax(x)
			if got := s.b.RowMax(x); got != mu {
				t.Fatalf("RowMax = %g, want %g", got, mu)
			}
			for _, scale := range []float32{1, 1 / 0.7, 0.05} {
				want, got := s.nan(n), s.nan(n)
				ws := s.r.ExpShift(want, x, mu, scale)
				gs := s.b.ExpShift(got, x, mu, scale)
				what := fmt.Sprintf("scale=%g", scale)
				near(t, what+" dst", got, want, F32Tol)
				if math.Abs(gs-ws) > F32Tol*ws {
					t.Errorf("%s: sum %.9g, want %.9g", what, gs, ws)
				}
				inPlace := s.clone(x)
				if is := s.b.ExpShift(inPlace, inPlace, mu, scale); is != gs {
					t.Errorf("%s: in place the sum is %.9g, into another buffer %.9g", what, is, gs)
				}
				near(t, what+" in place", inPlace, got, 0)
				if sum := s.b.ExpShift(nil, x, mu, scale); sum != gs {
					t.Errorf("%s: without dst the sum is %.9g, with it %.9g", what, sum, gs)
				}
			}
		})
	}
}

// badArguments checks that wrong sizes and out-of-range ids panic with a
// message naming the op, instead of touching memory they should not.
func (s suite) badArguments(t *testing.T) {
	f := s.m.zeros
	for _, c := range []struct {
		name string
		call func()
	}{
		{"Matmul short c", func() { s.b.Matmul(f(5), f(6), f(6), 2, 3, 2, false, false, 0) }},
		{"Matmul short a", func() { s.b.Matmul(f(6), f(3), f(6), 2, 3, 2, false, true, 0) }},
		{"LinearForward short weight", func() { s.b.LinearForward(f(6), f(4), f(5), nil, 2, 2, 3) }},
		{"LinearForwardBF16 short bias", func() { s.b.LinearForwardBF16(f(6), f(4), s.m.zeros16(6), f(2), 2, 2, 3) }},
		{"RMSNormForward short rstd", func() { s.b.RMSNormForward(f(4), f(1), f(4), f(2), 2, 2, 1e-6) }},
		{"RoPEForward rotary dims over head dim", func() { s.b.RoPEForward(f(4), f(4), []int32{0}, f(3), 1, 1, 4) }},
		{"AttentionForward seqOff not ending at N", func() {
			s.b.AttentionForward(f(8), f(2), f(8), f(8), f(8), []int32{0, 1}, 2, 1, 1, 4, 1)
		}},
		{"AttentionForward heads not a multiple", func() {
			s.b.AttentionForward(f(12), f(3), f(12), f(8), f(8), []int32{0, 1}, 1, 3, 2, 4, 1)
		}},
		{"AttentionWindowForward window 0", func() {
			s.b.AttentionWindowForward(f(4), f(1), f(4), f(4), f(4), []int32{0, 1}, 1, 1, 1, 4, 0, 1)
		}},
		{"AttentionWindowBackward short dv", func() {
			s.b.AttentionWindowBackward(f(4), f(4), f(3), f(4), f(4), f(1), f(4), f(4), f(4), []int32{0, 1}, 1, 1, 1, 4, 2, 1)
		}},
		{"AttentionDecode more queries than cache", func() { s.b.AttentionDecode(f(8), f(8), f(4), f(4), 2, 1, 1, 1, 4, 1) }},
		{"AttentionDecodeBatch more new tokens than cache", func() {
			s.b.AttentionDecodeBatch(f(12), f(12), f(12), f(12), [][]float32{f(8), f(4)}, [][]float32{f(8), f(4)}, []int32{0, 1, 3}, 3, 1, 1, 4, 0, 1)
		}},
		{"AttentionDecodeBatch value cache shorter than key cache", func() {
			s.b.AttentionDecodeBatch(f(4), f(4), f(4), f(4), [][]float32{f(8)}, [][]float32{f(4)}, []int32{0, 1}, 1, 1, 1, 4, 0, 1)
		}},
		{"AttentionDecodeBatch one cache for two sequences", func() {
			s.b.AttentionDecodeBatch(f(8), f(8), f(8), f(8), [][]float32{f(8)}, [][]float32{f(8)}, []int32{0, 1, 2}, 2, 1, 1, 4, 0, 1)
		}},
		{"EmbeddingForward id out of range", func() { s.b.EmbeddingForward(f(2), []int32{3}, f(6), 1, 2, 3) }},
		{"EmbeddingBackward negative id", func() { s.b.EmbeddingBackward(f(6), f(2), []int32{-1}, 1, 2, 3) }},
		{"LogprobForward target out of range", func() {
			s.b.LogprobForward(f(1), f(1), f(1), nil, f(2), f(6), []int32{3}, 1, 2, 3, 0)
		}},
		{"LogprobForward short expect", func() {
			s.b.LogprobForward(f(1), f(1), f(1), f(1), f(2), f(6), []int32{0}, 1, 2, 3, 0)
		}},
		{"LogprobBackwardExpect target out of range", func() {
			s.b.LogprobBackwardExpect(f(2), f(1), f(2), f(6), []int32{3}, 1, 2, 3)
		}},
		{"LogprobBackwardExpectBF16 short expect", func() {
			s.b.LogprobBackwardExpectBF16(f(2), f(1), f(1), s.m.zeros16(6), []int32{0}, 1, 2, 3)
		}},
		{"AdamW step 0", func() { s.b.AdamW(f(1), f(1), f(1), f(1), 1, 0, kernels.DefaultAdamW(1e-3)) }},
		{"Add short b", func() { s.b.Add(f(3), f(3), f(2), 3) }},
		{"AddScalar short out", func() { s.b.AddScalar(f(2), f(3), 1, 3) }},
		{"Copy short src", func() { s.b.Copy(f(3), f(2), 3) }},
		{"Copy negative n", func() { s.b.Copy(f(3), f(3), -1) }},
		{"Zero short x", func() { s.b.Zero(f(2), 3) }},
		{"SumSquares short x", func() { s.b.SumSquares(f(2), 3) }},
		{"GeGLUForward short up", func() { s.b.GeGLUForward(f(3), f(3), f(2), 3) }},
		{"GeGLUBackward short dup", func() { s.b.GeGLUBackward(f(3), f(2), f(3), f(3), f(3), 3) }},
		{"ExpShift short dst", func() { s.b.ExpShift(f(2), f(3), 0, 1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("no panic")
				}
				if msg := fmt.Sprint(r); !strings.HasPrefix(msg, "kernels.") {
					t.Fatalf("panic %q does not name the op", msg)
				}
			}()
			c.call()
		})
	}
}
