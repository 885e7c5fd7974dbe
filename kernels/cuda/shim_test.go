package cuda_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/internal/ccache"
	"github.com/hone-rl/hone/kernels/cuda/internal/ptxbuild"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// sourceKernels lists, sorted, every kernel the package's .cu files
// define: what a harness or emulator built from them must hold.
func sourceKernels(t *testing.T) []string {
	t.Helper()
	mods, err := ptxbuild.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, m := range mods {
		src, err := os.ReadFile(m + ".cu")
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, ptxbuild.Kernels(src)...)
	}
	slices.Sort(ks)
	return ks
}

// shimCXX returns the C++ compiler that builds the CPU shim's harnesses
// ($CXX, else g++). Without one the test is skipped, unless CI is set.
func shimCXX(t *testing.T) string {
	t.Helper()
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no C++ compiler for the CUDA CPU shim: %v", err)
		}
		t.Fatal(err)
	}
	return cxx
}

// buildShim compiles a test harness (testdata/NAME.cc, which includes
// cpushim/cuda_cpu.h and kernel sources) with g++ and returns the binary.
// Without a C++ compiler the test is skipped, unless CI is set.
func buildShim(t *testing.T, name string) string {
	t.Helper()
	cxx := shimCXX(t)
	readShimSources(t)
	// Through the compiler cache: most of the package's shim tests build
	// the same kernels_main. At -O1, as the emulator (cudafake): compiled
	// once a run now, it takes 10 s of a core instead of 7 at -O0, and
	// the shim tests then run in 13 s of CPU instead of 40.
	bin := filepath.Join(t.TempDir(), name)
	args := []string{"-std=c++17", "-O1", "-Wall", "-Werror", "-pthread", "-I", "cpushim", filepath.Join("testdata", name+".cc")}
	if _, err := ccache.Default().Compile(context.Background(), cxx, args, "", bin); err != nil {
		t.Fatalf("testdata/%s.cc: %v", name, err)
	}
	return bin
}

// readShimSources reads every file a shim harness may include: g++ reads
// them, not this process, so go test's cache would not know a test's
// result depends on them.
func readShimSources(t *testing.T) {
	t.Helper()
	for _, pattern := range []string{"*.cu", "*.cuh", "cpushim/*", "testdata/*.cc", "testdata/*.cu"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// shimSubset writes dir/name.cc, a harness of the kernels the .cu files
// srcs define and no others (testdata/kernels_main.cc's
// HONE_SHIM_KERNELS), each file included by its absolute path, and returns
// its path: for the tests that compile a harness of their own (a mutant,
// a sanitizer) and need a few kernels, a second or two of g++ rather than
// the seven or more every kernel takes. A launch of a kernel it lacks
// fails as an unknown kernel's.
func shimSubset(t *testing.T, dir, name string, srcs ...string) string {
	t.Helper()
	var text strings.Builder
	var table []string
	text.WriteString("#include \"cuda_cpu.h\"\n")
	for _, f := range srcs {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(abs)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&text, "#include %q\n", abs)
		for _, k := range ptxbuild.Kernels(src) {
			table = append(table, "KERNEL("+k+")")
		}
	}
	if len(table) == 0 {
		t.Fatalf("no kernels in %v", srcs)
	}
	harness, err := filepath.Abs(filepath.Join("testdata", "kernels_main.cc"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&text, "#define HONE_SHIM_KERNELS %s,\n#include %q\n", strings.Join(table, ", "), harness)
	main := filepath.Join(dir, name+".cc")
	if err := os.WriteFile(main, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return main
}

// shimHarness runs launches of Hone's kernels on the CPU: testdata/
// kernels_main.cc, which compiles every .cu through cpushim/cuda_cpu.h. One
// harness process serves every launch (over its stdin and stdout), one
// launch at a time; a process that dies is replaced at the next launch.
type shimHarness struct{ p *shimProc }

// shimProc is the running harness process of a shimHarness.
type shimProc struct {
	bin string
	env []string   // added to this process's environment (newShimHarnessEnv)
	mu  sync.Mutex // guards the fields below and the process's pipes
	cmd *exec.Cmd  // nil: none running
	in  *bufio.Writer
	w   io.WriteCloser
	out *bufio.Reader
	err *bytes.Buffer // its stderr, read after it ended
}

// hostView is the view a plan takes of a float32 buffer in host memory:
// n values from off on, the shim tests' stand-in for a device pointer
// plus an offset.
func hostView(b any, off, n int) any { return b.([]float32)[off : off+n] }

// hostViewBF16 is hostView for a bfloat16 buffer. It panics at an odd
// offset, which the plans must never ask for: their bfloat16 segments
// start on even offsets.
func hostViewBF16(b any, off, n int) any {
	if off%2 != 0 {
		panic(fmt.Sprintf("bfloat16 view at odd offset %d", off))
	}
	return b.([]uint16)[off : off+n]
}

// hostF32 allocates n float32 values in host memory: the buffers of an
// oracle on kernels/ref and of a plan run on the CPU shim.
func hostF32(n int) []float32 { return make([]float32, n) }

// hostBF16 is hostF32 for bfloat16 values.
func hostBF16(n int) []uint16 { return make([]uint16, n) }

// hostAnys lists xs as the []any a many-projection plan takes.
func hostAnys(xs [][]float32) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// newShimHarness is a harness on bin (buildShim's kernels_main); the
// process ends when t does.
func newShimHarness(t *testing.T, bin string) shimHarness {
	p := &shimProc{bin: bin}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := p.stop(); err != nil {
			t.Errorf("the shim harness: %v", err)
		}
	})
	return shimHarness{p}
}

// newShimHarnessEnv is newShimHarness whose process runs with env
// ("NAME=value") added to the environment.
func newShimHarnessEnv(t *testing.T, bin string, env ...string) shimHarness {
	h := newShimHarness(t, bin)
	h.p.env = env
	return h
}

// start starts the process; p.mu is held.
func (p *shimProc) start() error {
	cmd := exec.Command(p.bin)
	if p.env != nil {
		cmd.Env = append(os.Environ(), p.env...)
	}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p.err = &bytes.Buffer{}
	cmd.Stderr = p.err
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.bin, err)
	}
	p.cmd, p.w, p.in, p.out = cmd, w, bufio.NewWriterSize(w, 1<<16), bufio.NewReaderSize(r, 1<<16)
	return nil
}

// stop closes the process's input and waits for it to end; p.mu is held.
func (p *shimProc) stop() error {
	if p.cmd == nil {
		return nil
	}
	_ = p.w.Close()
	err := p.cmd.Wait()
	p.cmd = nil
	if err != nil {
		return fmt.Errorf("%v: %s", err, p.err.String())
	}
	return nil
}

// fail ends a process whose stream broke and describes why; p.mu is held.
func (p *shimProc) fail(what string, err error) error {
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
	}
	werr := p.stop()
	return fmt.Errorf("%s: %v (the harness: %v)", what, err, werr)
}

// run runs one launch. Its arguments are host slices ([]float32, []int32,
// []uint16; a nil one is a null pointer, one that starts where an earlier
// one starts is passed as the same memory), int and float32; the slices
// hold the kernel's results after.
func (h shimHarness) run(s cuda.Step) error {
	var in bytes.Buffer
	put := func(v any) {
		if err := binary.Write(&in, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	put(int32(len(s.Kernel)))
	in.WriteString(s.Kernel)
	for _, v := range []int{s.Grid.X, s.Grid.Y, s.Grid.Z, s.Block.X, s.Block.Y, s.Block.Z, s.SharedBytes} {
		put(int32(v))
	}
	put(int32(len(s.Args)))
	var arrays []any        // the array arguments written, in order
	starts := map[any]int{} // first element's address → argument index
	array := func(k int, tag int32, n int, first any, v any) {
		if n == 0 || first == nil {
			put(int32(6))
			return
		}
		if j, ok := starts[first]; ok {
			put(int32(7))
			put(int32(j))
			return
		}
		starts[first] = k
		put(tag)
		put(int32(n))
		put(v)
		arrays = append(arrays, v)
	}
	for k, a := range s.Args {
		switch v := a.(type) {
		case []float32:
			var first any
			if len(v) > 0 {
				first = &v[0]
			}
			array(k, 1, len(v), first, v)
		case []int32:
			var first any
			if len(v) > 0 {
				first = &v[0]
			}
			array(k, 2, len(v), first, v)
		case []uint16:
			var first any
			if len(v) > 0 {
				first = &v[0]
			}
			array(k, 3, len(v), first, v)
		case int:
			put(int32(4))
			put(int32(v))
		case float32:
			put(int32(5))
			put(v)
		default:
			return fmt.Errorf("%s: argument %d: a %T", s.Kernel, k, a)
		}
	}
	p := h.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		if err := p.start(); err != nil {
			return fmt.Errorf("%s: %w", s.Kernel, err)
		}
	}
	what := fmt.Sprintf("%s on %v×%v", s.Kernel, s.Grid, s.Block)
	if _, err := p.in.Write(in.Bytes()); err != nil {
		return p.fail(what, err)
	}
	if err := p.in.Flush(); err != nil {
		return p.fail(what, err)
	}
	var head [2]int32
	if err := binary.Read(p.out, binary.LittleEndian, &head); err != nil {
		return p.fail(what, err)
	}
	msg := make([]byte, head[1])
	if _, err := io.ReadFull(p.out, msg); err != nil {
		return p.fail(what, err)
	}
	switch head[0] {
	case 0:
	case 3: // the launch failed; the harness goes on
		return fmt.Errorf("%s: %s", what, msg)
	default:
		return p.fail(what, fmt.Errorf("status %d: %s", head[0], msg))
	}
	for _, v := range arrays {
		if err := binary.Read(p.out, binary.LittleEndian, v); err != nil {
			return p.fail(s.Kernel+": reading its results back", err)
		}
	}
	return nil
}

// runPlan runs an op's launches in order; a failure panics (kerneltest
// drives the ops through kernels.Backend, which returns no errors).
func (h shimHarness) runPlan(steps []cuda.Step) {
	for _, s := range steps {
		if g := s.Gemm; g != nil { // cuBLAS's part, from kernels/ref
			ref.New().Matmul(g.C.([]float32), g.A.([]float32), g.B.([]float32), g.M, g.N, g.K, false, g.TransB, g.Beta)
			continue
		}
		if err := h.run(s); err != nil {
			panic("CUDA kernel on the CPU shim: " + err.Error())
		}
	}
}

// shimBackend is kernels/ref with the ops kernels/cuda has kernels for
// replaced by those kernels, run on the CPU shim with Ops' launch plans.
type shimBackend struct {
	ref.Backend
	h shimHarness
}

func (b shimBackend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	b.h.runPlan(cuda.PlanRMSNormForward(out, rstd, inp, weight, N, C, eps))
}

func (b shimBackend) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	b.h.runPlan(cuda.PlanRMSNormBackward(dinp, dweight, nil, dout, rstd, inp, weight, dweight != nil, N, C))
}

func (b shimBackend) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.h.runPlan(cuda.PlanRoPE("rope_forward", out, inp, pos, invFreq, N, H, D, len(invFreq)))
}

func (b shimBackend) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.h.runPlan(cuda.PlanRoPE("rope_backward", dinp, dout, pos, invFreq, N, H, D, len(invFreq)))
}

func (b shimBackend) SwiGLUForward(out, gate, up []float32, n int) {
	b.h.runPlan(cuda.PlanFlat("swiglu_forward", n, out, gate, up, n))
}

func (b shimBackend) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	b.h.runPlan(cuda.PlanFlat("swiglu_backward", n, dgate, dup, dout, gate, up, n))
}

func (b shimBackend) EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int) {
	b.h.runPlan(cuda.PlanRows("embedding_forward", N, C, out, ids, table, C, V))
}

func (b shimBackend) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	b.h.runPlan(cuda.PlanRows("embedding_forward_bf16", N, C, out, ids, table, C, V))
}

func (b shimBackend) EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int) {
	b.h.runPlan(cuda.PlanEmbeddingBwd(dtable, dout, ids, make([]int32, 2*N), N, C, V))
}

func (b shimBackend) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	b.h.runPlan(cuda.PlanAdamW(param, grad, m, v, n, step, h))
}

func (b shimBackend) Add(out, x, y []float32, n int) {
	b.h.runPlan(cuda.PlanFlat("add", n, out, x, y, n))
}

func (b shimBackend) Scale(out, x []float32, s float32, n int) {
	b.h.runPlan(cuda.PlanFlat("scale", n, out, x, s, n))
}

func (b shimBackend) AXPY(out, x []float32, s float32, n int) {
	b.h.runPlan(cuda.PlanFlat("axpy", n, out, x, s, n))
}

func (b shimBackend) LogSoftmaxForward(out, inp []float32, N, V int) {
	b.h.runPlan(cuda.PlanRows("logsoftmax_forward", N, V, out, inp, V))
}

func (b shimBackend) LogSoftmaxBackward(dinp, dout, out []float32, N, V int) {
	b.h.runPlan(cuda.PlanRows("logsoftmax_backward", N, V, dinp, dout, out, V))
}

func (b shimBackend) EntropyForward(ent, inp []float32, N, V int) {
	b.h.runPlan(cuda.PlanRows("entropy_forward", N, V, ent, inp, V))
}

func (b shimBackend) EntropyBackward(dinp, dent, inp []float32, N, V int) {
	b.h.runPlan(cuda.PlanRows("entropy_backward", N, V, dinp, dent, inp, V))
}

// TestKernelsOnCPUShim runs the .cu kernels — the CUDA source, compiled by
// g++ through cpushim/cuda_cpu.h — with Ops' launch plans through
// kerneltest's conformance cases for their ops, against kernels/ref at
// F32Tol, and the PyTorch goldens where there are some; and on block sizes
// the plans do not pick.
func TestKernelsOnCPUShim(t *testing.T) {
	t.Parallel() // most of the time is the compiler's
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	t.Run("harness holds every kernel", func(t *testing.T) {
		out, err := exec.Command(h.p.bin, "-list").Output()
		if err != nil {
			t.Fatal(err)
		}
		got, want := strings.Fields(string(out)), sourceKernels(t)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("testdata/kernels_main.cc holds %v, the .cu files define %v", got, want)
		}
	})
	t.Run("conformance", func(t *testing.T) {
		kerneltest.RunOps(t, shimBackend{h: h}, "RMSNorm", "RoPE", "SwiGLU", "Embedding", "AdamW", "Elementwise", "LogSoftmax", "Entropy",
			"GeGLU", "CopyZero")
	})
	t.Run("conformance linear and logprob", func(t *testing.T) {
		t.Parallel()
		kerneltest.RunOps(t, shimBackend{h: h}, "Linear", "LinearBF16", "Logprob")
	})
	t.Run("conformance bf16 compute", func(t *testing.T) {
		t.Parallel()
		kerneltest.RunOps(t, shimBF16{shimBackend{h: h}}, "LinearBF16", "LogprobBF16")
	})
	t.Run("LogprobBF16 exact", func(t *testing.T) { logprobBF16OnShim(t, h) })
	t.Run("goldens", func(t *testing.T) {
		kerneltest.RunGoldenOps(t, shimBackend{h: h}, "../../testdata/golden/kernels", "RoPE", "AdamW")
	})
	t.Run("attention", func(t *testing.T) { attentionOnShim(t, h) })
	t.Run("RMSNorm blocks", func(t *testing.T) { rmsnormBlocks(t, h, rmsnormShapes) })
	t.Run("gated LoRA forward", func(t *testing.T) { gatedLoRAOnShim(t, h) })
	t.Run("gated LoRA backward", func(t *testing.T) { gatedLoRABackwardOnShim(t, h) })
	t.Run("gated LoRA, gate and up bfloat16", func(t *testing.T) { gatedLoRABF16InOnShim(t, h) })
	t.Run("LogprobForward", func(t *testing.T) { logprobOnShim(t, h, logprobShapes) })
	t.Run("EmbeddingBackward deterministic", func(t *testing.T) { embeddingBackwardDeterministic(t, h) })
	t.Run("Embedding ids out of range", func(t *testing.T) {
		b := shimBackend{h: h}
		const N, C, V = 3, 40, 2
		table := []float32{}
		for i := range V * C {
			table = append(table, float32(i))
		}
		ids := []int32{1, 2, -1} // rows 1 and 2 are outside [0, V)
		out := make([]float32, N*C)
		b.EmbeddingForward(out, ids, table, N, C, V)
		for i, v := range out {
			if n := i / C; n == 0 && v != table[C+i] || n > 0 && !math.IsNaN(float64(v)) {
				t.Fatalf("row %d (id %d), column %d: %g", n, ids[n], i%C, v)
			}
		}
		dtable, dout := make([]float32, V*C), make([]float32, N*C)
		for i := range dout {
			dout[i] = float32(i)
		}
		b.EmbeddingBackward(dtable, dout, []int32{1, 5, -7}, N, C, V)
		for i, v := range dtable {
			if want := map[bool]float32{true: float32(i - C), false: 0}[i >= C]; v != want {
				t.Fatalf("dtable[%d] = %g, want %g (only row 0's id is in range)", i, v, want)
			}
		}
	})
}

// rmsnormShapes are rmsnormBlocks' rows, columns and threads a block: one
// warp, several, a partial last column stride.
var rmsnormShapes = [][3]int{{1, 1, 32}, {3, 70, 64}, {5, 33, 96}, {2, 17, 32}, {5, 896, 256}, {1, 1000, 1024}}

// rmsnormBlocks runs the RMSNorm kernels on shapes (N, C, threads a block),
// against kernels/ref.
func rmsnormBlocks(t *testing.T, h shimHarness, shapes [][3]int) {
	r := rand.New(rand.NewPCG(28, 4))
	for _, s := range shapes {
		N, C, threads := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("N=%d,C=%d,threads=%d", N, C, threads), func(t *testing.T) {
			inp, weight := randn(r, N*C), randn(r, C)
			const eps = 1e-6
			out, rstd := make([]float32, N*C), make([]float32, N)
			ref.New().RMSNormForward(out, rstd, inp, weight, N, C, eps)
			gOut, gRstd := make([]float32, N*C), make([]float32, N)
			block := cuda.Dim3{X: threads, Y: 1, Z: 1}
			if err := h.run(cuda.Step{Kernel: "rmsnorm_forward", Grid: cuda.Dim3{X: N, Y: 1, Z: 1}, Block: block,
				Args: []any{gOut, gRstd, inp, weight, C, float32(eps)}}); err != nil {
				t.Fatal(err)
			}
			near(t, "out", gOut, out, kerneltest.F32Tol)
			near(t, "rstd", gRstd, rstd, kerneltest.F32Tol)

			dout, dinp := randn(r, N*C), randn(r, N*C)
			want := append([]float32(nil), dinp...)
			ref.New().RMSNormBackward(want, nil, dout, rstd, inp, weight, N, C)
			if err := h.run(cuda.Step{Kernel: "rmsnorm_backward", Grid: cuda.Dim3{X: N, Y: 1, Z: 1}, Block: block,
				Args: []any{dinp, dout, rstd, inp, weight, C}}); err != nil {
				t.Fatal(err)
			}
			near(t, "dinp", dinp, want, kerneltest.F32Tol)

			// The backward writing dinp's bf16 rounding too: dinp the
			// bits of rmsnorm_backward's, the copy ToBF16's of them.
			dinpBF, dinp2 := make([]uint16, N*C), randn(r, N*C)
			wantDinp := slices.Clone(dinp2)
			if err := h.run(cuda.Step{Kernel: "rmsnorm_backward", Grid: cuda.Dim3{X: N, Y: 1, Z: 1}, Block: block,
				Args: []any{wantDinp, dout, rstd, inp, weight, C}}); err != nil {
				t.Fatal(err)
			}
			if err := h.run(cuda.Step{Kernel: "rmsnorm_backward_bf16", Grid: cuda.Dim3{X: N, Y: 1, Z: 1}, Block: block,
				Args: []any{dinp2, dinpBF, dout, rstd, inp, weight, C}}); err != nil {
				t.Fatal(err)
			}
			wantBF16 := make([]uint16, N*C)
			kernels.ToBF16(wantBF16, wantDinp)
			if !sameBits(dinp2, wantDinp) || !slices.Equal(dinpBF, wantBF16) {
				t.Errorf("rmsnorm_backward_bf16: dinp or its copy differs from rmsnorm_backward's then ToBF16")
			}

			// The fused residual add: the bits of add then
			// rmsnorm_forward_bf16 (or rmsnorm_forward without outBF),
			// the sum apart from, or in place of, either addend.
			a, res := randn(r, N*C), randn(r, N*C)
			wantSum := make([]float32, N*C)
			h.runPlan(cuda.PlanFlat("add", N*C, wantSum, a, res, N*C))
			wantOut, wantRstd, wantBF := make([]float32, N*C), make([]float32, N), make([]uint16, N*C)
			if err := h.run(cuda.Step{Kernel: "rmsnorm_forward_bf16", Grid: cuda.Dim3{X: N, Y: 1, Z: 1}, Block: block,
				Args: []any{wantOut, wantRstd, wantBF, wantSum, weight, C, float32(eps)}}); err != nil {
				t.Fatal(err)
			}
			// rmsnorm_forward_bf16 with a null out (the backward's
			// recompute of the normed input as bfloat16 only): rstd and
			// outBF the bits they have with out.
			onlyRstd, onlyBF := make([]float32, N), make([]uint16, N*C)
			if err := h.run(cuda.Step{Kernel: "rmsnorm_forward_bf16", Grid: cuda.Dim3{X: N, Y: 1, Z: 1}, Block: block,
				Args: []any{[]float32(nil), onlyRstd, onlyBF, wantSum, weight, C, float32(eps)}}); err != nil {
				t.Fatal(err)
			}
			if !sameBits(onlyRstd, wantRstd) || !slices.Equal(onlyBF, wantBF) {
				t.Errorf("rmsnorm_forward_bf16 with a null out: rstd or outBF differs from the bits with out")
			}
			for _, alias := range []string{"apart", "inp", "res"} {
				for _, withBF := range []bool{true, false} {
					in, rs := slices.Clone(a), slices.Clone(res)
					sum := map[string][]float32{"apart": make([]float32, N*C), "inp": in, "res": rs}[alias]
					out, rstd := make([]float32, N*C), make([]float32, N)
					var outBF []uint16
					if withBF {
						outBF = make([]uint16, N*C)
					}
					if err := h.run(cuda.Step{Kernel: "rmsnorm_forward_add", Grid: cuda.Dim3{X: N, Y: 1, Z: 1}, Block: block,
						Args: []any{sum, out, rstd, outBF, in, rs, weight, C, float32(eps)}}); err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("rmsnorm_forward_add, sum %s, outBF %v", alias, withBF)
					for _, c := range []struct {
						name      string
						got, want []float32
					}{{"sum", sum, wantSum}, {"out", out, wantOut}, {"rstd", rstd, wantRstd}} {
						if !sameBits(c.got, c.want) {
							t.Errorf("%s: %s differs from add then rmsnorm_forward_bf16", what, c.name)
						}
					}
					if withBF && !slices.Equal(outBF, wantBF) {
						t.Errorf("%s: outBF differs from rmsnorm_forward_bf16's", what)
					}
				}
			}
		})
	}
}

// runShimKernel runs one kernel of testdata/shim_kernels.cu on 2 blocks of
// 64 threads; it returns the outputs, or the launch's error message.
func runShimKernel(t *testing.T, bin, kernel string) ([]float64, string) {
	t.Helper()
	cmd := exec.Command(bin, kernel)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return nil, stderr.String()
	}
	if err != nil {
		t.Fatalf("%s: %v: %s", kernel, err, stderr.String())
	}
	var vals []float64
	for _, f := range strings.Fields(string(out)) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	return vals, ""
}

// TestShim checks the shim on the kernels of testdata/shim_kernels.cu.
func TestShim(t *testing.T) {
	t.Parallel()
	bin := buildShim(t, "shim_main")
	t.Run("semantics", func(t *testing.T) { shimSemantics(t, bin) })
	t.Run("divergence", func(t *testing.T) { shimDivergence(t, bin) })
	t.Run("dynamic shared overrun", func(t *testing.T) { shimDynamicOverrun(t, bin) })
	t.Run("wmma", func(t *testing.T) { shimWMMA(t, bin) })
	t.Run("mma", func(t *testing.T) { shimMMA(t, bin) })
}

// shimMMA: mma.cuh's emulated m16n8k16 product on fragments laid out as
// the PTX ISA documents equals a plain loop over the same
// bfloat16-rounded operands in float32 (k in order after C, as the
// emulation sums), and its ldmatrix .x4 (and .trans) give each lane the
// elements the ISA's layout says, whatever order the lanes' row
// addresses come in: a layout the emulation got wrong fails here, not
// only as a wrong attention.
func shimMMA(t *testing.T, bin string) {
	got, msg := runShimKernel(t, bin, "mma_product")
	if msg != "" {
		t.Fatalf("mma_product: %s", msg)
	}
	bf := func(f float32) float32 { return kernels.F32(kernels.BF16(f)) }
	for b := range 2 {
		for w := range 2 {
			for m := range 16 {
				for n := range 8 {
					acc := float32(m*8+n-60+b+w) / 4
					for k := range 16 {
						x := bf(float32((m*5+k*11+b*3+w*7)%29-14) / 9)
						y := bf(float32((k*13+n*7+b+w*5)%17-8) / 3)
						acc += float32(x * y)
					}
					if g := float32(got[256*b+128*w+8*m+n]); g != acc {
						t.Errorf("mma_product block %d, warp %d: D[%d][%d] = %g, want %g", b, w, m, n, g, acc)
					}
				}
			}
		}
	}
	got, msg = runShimKernel(t, bin, "ldmatrix_layout")
	if msg != "" {
		t.Fatalf("ldmatrix_layout: %s", msg)
	}
	// The tile row and first column of row rr of matrix i, as
	// ldmatrix_layout's warp w points its lanes.
	row := func(w, i, rr int) int {
		if w == 0 {
			return 8*(i%2) + rr
		}
		return 8*(i/2) + 7 - rr
	}
	col := func(w, i int) int {
		if w == 0 {
			return 8 * (i / 2)
		}
		return 8 * (i % 2)
	}
	for b := range 2 {
		for w := range 2 {
			for l := range 32 {
				for i := range 4 {
					var e [2]int
					for h := range 2 {
						if b == 0 { // row l/4, column 2·(l%4)+h of matrix i
							e[h] = 16*row(w, i, l/4) + col(w, i) + 2*(l%4) + h
						} else { // transposed: row 2·(l%4)+h, column l/4
							e[h] = 16*row(w, i, 2*(l%4)+h) + col(w, i) + l/4
						}
					}
					if g, want := got[256*b+128*w+4*l+i], float64(e[0]+256*e[1]); g != want {
						t.Errorf("ldmatrix_layout block %d (trans %v), warp %d, lane %d, register %d: %g, want %g (elements %d, %d)",
							b, b == 1, w, l, i, g, want, e[0], e[1])
					}
				}
			}
		}
	}
}

// shimWMMA: the shim's nvcuda::wmma product (both operand layouts, an
// accumulator loaded or filled, stored row- or column-major) equals a plain
// loop over the same bfloat16-rounded operands in float32, and its
// __float2bfloat16_rn rounds as kernels.BF16 (nearest, ties to even).
func shimWMMA(t *testing.T, bin string) {
	got, msg := runShimKernel(t, bin, "wmma_product")
	if msg != "" {
		t.Fatalf("wmma_product: %s", msg)
	}
	bf := func(f float32) float32 { return kernels.F32(kernels.BF16(f)) }
	for b := range 2 {
		for r := range 16 {
			for c := range 16 {
				acc := float32(0.25)
				if b == 0 {
					acc = float32(r-c) / 3
				}
				for k := range 16 {
					x := bf(float32((r*7+k*13+b*5)%23-11) / 7)
					y := bf(float32((k*11+c*3+b)%19-9) / 5)
					acc += float32(x * y)
				}
				at := 256*b + 16*r + c
				if b == 1 {
					at = 256 + 16*c + r // stored column-major
				}
				if g := float32(got[at]); g != acc {
					t.Errorf("block %d: D[%d][%d] = %g, want %g", b, r, c, g, acc)
				}
			}
		}
	}
	got, msg = runShimKernel(t, bin, "bf16_round")
	if msg != "" {
		t.Fatalf("bf16_round: %s", msg)
	}
	for i, g := range got {
		x := math.Float32frombits(0x3f800000 + uint32(i)*0x2000)
		if i%2 == 1 {
			x = -x
		}
		if want := bf(x); float32(g) != want {
			t.Errorf("bf16(%g) = %g, want %g", x, g, want)
		}
	}
}

// shimSemantics: the shim's warp shuffles (down, up, xor, and indexed
// within 16-lane segments) return CUDA's lanes, out-of-range sources keep
// their own value, __shared__ memory is per block, and atomicAdd returns
// each adder a different value before it.
func shimSemantics(t *testing.T, bin string) {
	const n = 64
	check := func(kernel string, want func(b, part, t int) (float64, bool)) {
		got, msg := runShimKernel(t, bin, kernel)
		if msg != "" {
			t.Fatalf("%s: %s", kernel, msg)
		}
		for b := range 2 {
			for part := range 4 {
				for th := range n {
					w, ok := want(b, part, th)
					if g := got[(b*4+part)*n+th]; ok && g != w {
						t.Errorf("%s: block %d, output %d, thread %d: %g, want %g", kernel, b, part, th, g, w)
					}
				}
			}
		}
	}
	check("shuffles", func(b, part, th int) (float64, bool) {
		lane, base := th%32, th/32*32
		src := th
		switch part {
		case 0: // down 3
			if lane+3 < 32 {
				src = th + 3
			}
		case 1: // up 2
			if lane >= 2 {
				src = th - 2
			}
		case 2: // xor 5
			src = base + (lane ^ 5)
		case 3: // lane 7 of each 16-lane segment
			src = base + lane/16*16 + 7
		}
		return float64(b*1000 + src), true
	})
	check("shared_per_block", func(b, part, th int) (float64, bool) {
		return float64(b*1000 + n - 1 - th), part == 0
	})
	check("dynamic_shared", func(b, part, th int) (float64, bool) {
		switch {
		case part == 0: // the block's own values
			return float64(b*1000 + n - 1 - th), true
		case part == 1: // 0xff bytes (NaN) before the block wrote
			return 1, true
		case part == 2 && th == 0: // the launch's bytes
			return 4 * n, true
		case part == 2 && th == 1: // the address mod 16
			return 0, true
		}
		return 0, false
	})
	got, msg := runShimKernel(t, bin, "atomic_add")
	if msg != "" {
		t.Fatalf("atomic_add: %s", msg)
	}
	if got[0] != 2*n {
		t.Errorf("atomic_add: the counter is %g after %d adds", got[0], 2*n)
	}
	seen := slices.Sorted(slices.Values(got[1 : 1+2*n]))
	for i, v := range seen {
		if v != float64(i) {
			t.Fatalf("atomic_add: the values seen, sorted, are %v, want 0…%d once each", seen, 2*n-1)
		}
	}
}

// shimDynamicOverrun: reading the float just past a launch's dynamic
// shared memory faults (the page after it is PROT_NONE): the harness dies
// of SIGSEGV rather than reading another block's or launch's bytes.
func shimDynamicOverrun(t *testing.T, bin string) {
	cmd := exec.Command(bin, "dynamic_shared_overrun")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("reading past the dynamic shared memory: %v, want the harness killed by SIGSEGV", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSEGV {
		t.Errorf("reading past the dynamic shared memory: %v, want the harness killed by SIGSEGV", err)
	}
}

// shimDivergence: a barrier or shuffle that only part of the block or warp
// reaches, or that threads reach at two places, stops the launch with a
// message naming the place, instead of a wrong result.
func shimDivergence(t *testing.T, bin string) {
	for kernel, says := range map[string][]string{
		"barrier_in_branch":    {"divergent", "testdata/shim_kernels.cu:25"},
		"barrier_two_places":   {"divergent __syncthreads", "testdata/shim_kernels.cu:31", "testdata/shim_kernels.cu:33"},
		"shuffle_in_branch":    {"divergent", "shuffle at testdata/shim_kernels.cu:40"},
		"shuffle_then_barrier": {"divergent barriers: no thread can go on", "shuffle at testdata/shim_kernels.cu:46", "__syncthreads at testdata/shim_kernels.cu:47"},
		"wmma_in_branch":       {"divergent", "testdata/shim_kernels.cu:126"},
		"mma_in_branch":        {"divergent", "testdata/shim_kernels.cu:189"},
	} {
		_, msg := runShimKernel(t, bin, kernel)
		if msg == "" {
			t.Errorf("%s ran without error", kernel)
		}
		for _, s := range says {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: message %q does not say %q", kernel, msg, s)
			}
		}
	}
}

// logprobShapes are kerneltest's logprob shapes (N, C, V, chunk; chunk 1:
// a chunk a column, 0: the default), and a target in the last chunk and a
// last chunk of one column.
var logprobShapes = [][4]int{{1, 4, 7, 0}, {2, 8, 100, 16}, {17, 16, 257, 64}, {5, 32, 1000, 0}, {3, 8, 50, 50}, {4, 8, 33, 1}, {6, 8, 65, 32}}

// logprobTargets draws targets in [0, V), with row 1 ignored (−1) when N >
// 1 and the last row's target the last column when N > 2.
func logprobTargets(r *rand.Rand, N, V int) []int32 {
	t := make([]int32, N)
	for i := range t {
		t[i] = int32(r.IntN(V))
	}
	if N > 2 {
		t[N-1] = int32(V - 1)
	}
	if N > 1 {
		t[1] = -1
	}
	return t
}

// logprobOnShim runs LogprobForward's plan — the GEMMs from kernels/ref,
// logprob.cu's kernels on the shim — against kernels/ref's LogprobForward,
// without and with expect, and LogprobBackwardExpect's, on shapes (N, C,
// V, chunk).
func logprobOnShim(t *testing.T, h shimHarness, shapes [][4]int) {
	r := rand.New(rand.NewPCG(28, 9))
	for _, s := range shapes {
		N, C, V, chunk := s[0], s[1], s[2], s[3]
		t.Run(fmt.Sprintf("N=%d,C=%d,V=%d,chunk=%d", N, C, V, chunk), func(t *testing.T) {
			hidden, weight := randn(r, N*C), randn(r, V*C)
			for i := range hidden {
				hidden[i] *= 2 // logits of a few units: a peaked softmax
			}
			targets := logprobTargets(r, N, V)
			wlp, went, wlse, wex := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N*C)
			ref.New().LogprobForward(wlp, went, wlse, wex, hidden, weight, targets, N, C, V, chunk)
			for _, withExpect := range []bool{false, true} {
				lp, ent, lse := make([]float32, N), make([]float32, N), make([]float32, N)
				var ex []float32
				if withExpect {
					ex = make([]float32, N*C)
					for i := range ex {
						ex[i] = float32(math.NaN()) // overwritten, never read
					}
				}
				z, state := make([]float32, N*cuda.LogprobChunk(chunk, V)), make([]float32, 5*N)
				h.runPlan(cuda.PlanLogprob(hostView, lp, ent, lse, ex, hidden, weight, targets, z, state, withExpect, N, C, V, chunk))
				what := fmt.Sprintf("expect=%v: ", withExpect)
				near(t, what+"logprob", lp, wlp, kerneltest.F32Tol)
				near(t, what+"entropy", ent, went, kerneltest.F32Tol)
				near(t, what+"lse", lse, wlse, kerneltest.F32Tol)
				if N > 1 && lp[1] != 0 {
					t.Errorf("%signored row: logprob %g, want 0", what, lp[1])
				}
				if withExpect {
					near(t, "expect", ex, wex, kerneltest.F32Tol)
				}
			}
			dlp, dh := randn(r, N), randn(r, N*C)
			want := append([]float32(nil), dh...)
			ref.New().LogprobBackwardExpect(want, dlp, wex, weight, targets, N, C, V)
			h.runPlan(cuda.PlanRows("logprob_backward_expect", N, C, dh, dlp, wex, weight, targets, C, V))
			near(t, "LogprobBackwardExpect dhidden", dh, want, kerneltest.F32Tol)
		})
	}
}
