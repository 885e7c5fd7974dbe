package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// The memory traffic and launches of a LoRA training step on cuda.Backend
// in the bf16 precision (bfloat16 weights, bf16 tensor-core GEMMs), counted
// rather than timed: trafficBackend records every op the model issues and,
// for each, the launches cuda.Backend makes for it (a kernel's name, or
// "gemm") with the bytes each reads and writes at the least (every operand
// once; a GEMM's C read only when beta ≠ 0). Running the model on it with
// nothing computing (a nil inner backend: the ops only count) gives the
// exact op sequence of the 7B shape at its real sizes without a GPU;
// TestStepTrafficCUDAEmulated checks the launch model against the kernels
// the emulated device launches and the GEMMs its fake cuBLAS runs.
//
// Bytes a compute-bound launch moves cost no time of their own: a GEMM
// whose products take longer at the tensor cores' peak than its bytes at
// hbm reads and writes them behind its arithmetic (its C read at beta 1
// in the epilogue included). Each launch is therefore also split by a
// roofline (bandwidthBound) into bandwidth-bound or not, and the tables
// give the bytes of the bandwidth-bound ones, the bytes that set a
// memory-bound launch's time. A model of an H100's or H200's peaks, not a
// measurement.

// launch is one kernel launch or GEMM an op makes, with the bytes it moves
// and the products it computes.
type launch struct {
	kernel      string  // the kernel's name, or "gemm"
	read, wrote int64   // bytes
	flops       int64   // 2 per multiply-add of its products (kernels: none counted, the attention's conventional count)
	peak        float64 // FLOP/s its products run at (0 without flops)
}

// The roofline's peaks, dense, of an H100 or H200 SXM: bfloat16 tensor
// cores (the bf16 GEMMs, the attention) 989 TFLOP/s, TF32 tensor cores
// 495 (the products on float32 operands under Backend.Matmul's rule with
// K ≥ cuda.TF32MinK, which the bf16 precision runs on TF32: matmulL),
// float32 without tensor cores 67 (the exact float32 products). Before
// the TF32 peak, every float32 product was held to the lowest, which
// called the wide TF32 ones (the DA products over x: about 24 FLOP a
// byte) compute-bound where TF32 leaves them bandwidth-bound.
const peakBF16, peakTF32, peakF32 = 989e12, 495e12, 67e12

// bandwidthBound reports whether l's bytes at hbm take at least as long as
// its products at its peak: then its bytes set its time.
func (l launch) bandwidthBound() bool {
	return l.flops == 0 || float64(l.read+l.wrote)/hbm >= float64(l.flops)/l.peak
}

// opRecord is one op call and its launches.
type opRecord struct {
	op       string
	launches []launch
}

// trafficBackend records every op (ops) with its launches as cuda.Backend
// in kernels.PrecisionBF16 makes them, then runs it on the embedded
// backend, unless that is nil: then nothing computes. It allocates through
// the embedded backend when that is a kernels.Allocator, else with make
// (memory the ops never touch, so a 7B-shaped pass costs address space
// only), and says it is an Allocator either way: the model takes its
// device path (the loss gradients copied into the pass's memory).
type trafficBackend struct {
	kernels.Backend // nil: count only; an op this file does not model panics
	ops             []opRecord
	// check, when set, runs after each op the embedded backend ran, with
	// the launches the model predicted for it.
	check func(op string, want []launch)
	maps  map[uintptr][]byte // the memory mapped gave out, by address
}

const f32, b16 = 4, 2 // bytes of a float32 and a bfloat16

func (t *trafficBackend) add(op string, ls ...launch) {
	t.ops = append(t.ops, opRecord{op, ls})
}

// run records op with its launches, then runs it on the embedded backend.
func (t *trafficBackend) run(op string, ls []launch, f func(kernels.Backend)) {
	t.add(op, ls...)
	if t.Backend == nil {
		return
	}
	f(t.Backend)
	if t.check != nil {
		t.check(op, ls)
	}
}

func gemmL(M, N, K, elemAB int, beta float32) launch {
	return gemmLC(M, N, K, elemAB, f32, beta)
}

// matmulL is gemmL of a product on float32 operands under
// Backend.Matmul's rule (the LoRA products: TF32 from K = cuda.TF32MinK
// on in the bf16 precision). The exact cublasSgemm products (LinearForward,
// LoRAForwardMany's x product) are gemmL's, at float32's peak.
func matmulL(M, N, K int, beta float32) launch {
	l := gemmL(M, N, K, f32, beta)
	if K >= cuda.TF32MinK {
		l.peak = peakTF32
	}
	return l
}

// gemmLC is gemmL with C's elements of elemC bytes (kernels.DinpRounder's
// bfloat16 C).
func gemmLC(M, N, K, elemAB, elemC int, beta float32) launch {
	l := launch{"gemm", int64(elemAB) * int64(M*K+K*N), int64(elemC) * int64(M*N), 2 * int64(M) * int64(N) * int64(K), peakF32}
	if elemAB == b16 {
		l.peak = peakBF16
	}
	if beta != 0 {
		l.read += int64(elemC) * int64(M*N)
	}
	return l
}

func flat(kernel string, read, wrote int) launch {
	return launch{kernel: kernel, read: int64(read), wrote: int64(wrote)}
}

func (t *trafficBackend) Name() string {
	if t.Backend == nil {
		return "traffic"
	}
	return "traffic/" + t.Backend.Name()
}

func (t *trafficBackend) Close() error { return nil }

func (t *trafficBackend) AllocF32(n int) ([]float32, error) {
	if a, ok := t.Backend.(kernels.Allocator); ok {
		return a.AllocF32(n)
	}
	b, err := t.mapped(4 * n)
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n), err
}

func (t *trafficBackend) AllocBF16(n int) ([]uint16, error) {
	if a, ok := t.Backend.(kernels.Allocator); ok {
		return a.AllocBF16(n)
	}
	b, err := t.mapped(2 * n)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n), err
}

// mapped is fresh anonymous memory of n bytes (at least one page) for a
// trafficBackend that computes nothing: the ops never touch it, so a
// 7B-shaped step costs address space only, however often it runs (Go's
// make would clear reused heap memory, tens of seconds a 7B step).
func (t *trafficBackend) mapped(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, max(n, 1), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	if t.maps == nil {
		t.maps = map[uintptr][]byte{}
	}
	t.maps[uintptr(unsafe.Pointer(unsafe.SliceData(b)))] = b
	return b[:n], nil
}

// unmap returns the memory mapped at p, if mapped mapped it.
func (t *trafficBackend) unmap(p unsafe.Pointer) {
	if b, ok := t.maps[uintptr(p)]; ok {
		delete(t.maps, uintptr(p))
		syscall.Munmap(b)
	}
}

func (t *trafficBackend) FreeF32(s []float32) {
	if a, ok := t.Backend.(kernels.Allocator); ok {
		a.FreeF32(s)
		return
	}
	t.unmap(unsafe.Pointer(unsafe.SliceData(s)))
}

func (t *trafficBackend) FreeBF16(s []uint16) {
	if a, ok := t.Backend.(kernels.Allocator); ok {
		a.FreeBF16(s)
		return
	}
	t.unmap(unsafe.Pointer(unsafe.SliceData(s)))
}

var _ kernels.Allocator = (*trafficBackend)(nil)

func (t *trafficBackend) Matmul(c, a, b []float32, M, N, K int, transA, transB bool, beta float32) {
	t.run("Matmul", []launch{matmulL(M, N, K, beta)}, func(be kernels.Backend) { be.Matmul(c, a, b, M, N, K, transA, transB, beta) })
}

func biasL(withBias bool, N, OC int) []launch {
	if !withBias {
		return nil
	}
	return []launch{flat("bias_forward", f32*(N*OC+OC), f32*N*OC)}
}

func (t *trafficBackend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	ls := append([]launch{gemmL(N, OC, C, f32, 0)}, biasL(bias != nil, N, OC)...)
	t.run("LinearForward", ls, func(be kernels.Backend) { be.LinearForward(out, inp, weight, bias, N, C, OC) })
}

func (t *trafficBackend) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	ls := []launch{flat("f32_to_bf16", f32*N*C, b16*N*C), gemmL(N, OC, C, b16, 0)}
	ls = append(ls, biasL(bias != nil, N, OC)...)
	t.run("LinearForwardBF16", ls, func(be kernels.Backend) { be.LinearForwardBF16(out, inp, weight, bias, N, C, OC) })
}

var _ kernels.LinearManyBF16er = (*trafficBackend)(nil)

// LinearForwardBF16Many is kernels/cuda's: the input rounded once, then
// each product and its bias.
func (t *trafficBackend) LinearForwardBF16Many(outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int) {
	ls := []launch{flat("f32_to_bf16", f32*N*C, b16*N*C)}
	for i, oc := range OCs {
		ls = append(ls, gemmL(N, oc, C, b16, 0))
		ls = append(ls, biasL(biases != nil && biases[i] != nil, N, oc)...)
	}
	t.run("LinearForwardBF16Many", ls, func(be kernels.Backend) {
		kernels.LinearForwardBF16Many(be, outs, inp, weights, biases, N, C, OCs)
	})
}

var _ kernels.LinearAdderBF16 = (*trafficBackend)(nil)

// LinearForwardBF16ManyAdd is LinearForwardBF16Many with the GEMMs of the
// outputs it adds onto at beta 1: each reads its output in the epilogue.
func (t *trafficBackend) LinearForwardBF16ManyAdd(outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int, add []bool) {
	ls := []launch{flat("f32_to_bf16", f32*N*C, b16*N*C)}
	for i, oc := range OCs {
		var beta float32
		if add[i] {
			beta = 1
		}
		ls = append(ls, gemmL(N, oc, C, b16, beta))
		ls = append(ls, biasL(biases != nil && biases[i] != nil, N, oc)...)
	}
	t.run("LinearForwardBF16ManyAdd", ls, func(be kernels.Backend) {
		be.(kernels.LinearAdderBF16).LinearForwardBF16ManyAdd(outs, inp, weights, biases, N, C, OCs, add)
	})
}

func (t *trafficBackend) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	ls := []launch{flat("f32_to_bf16", f32*N*OC, b16*N*OC), gemmL(N, C, OC, b16, 1)}
	t.run("LinearBackwardBF16", ls, func(be kernels.Backend) { be.LinearBackwardBF16(dinp, dout, weight, N, C, OC) })
}

var _ kernels.DoutRounder = (*trafficBackend)(nil)

// RoundsLinearDout is cuda.Backend's in PrecisionBF16 (kernels.DoutRounder):
// the MLP's gated backward writes dgate's and dup's bf16 roundings, which
// the gate and up projections' products take.
func (t *trafficBackend) RoundsLinearDout() bool { return true }

// LinearBackwardBF16Rounded is LinearBackwardBF16 without its f32_to_bf16
// pass: the GEMM alone.
func (t *trafficBackend) LinearBackwardBF16Rounded(dinp []float32, dout, weight []uint16, N, C, OC int) {
	t.run("LinearBackwardBF16Rounded", []launch{gemmL(N, C, OC, b16, 1)}, func(be kernels.Backend) {
		be.(kernels.DoutRounder).LinearBackwardBF16Rounded(dinp, dout, weight, N, C, OC)
	})
}

// SwiGLUBackwardSetRounded is one kernel writing SwiGLUBackwardSet's
// outputs (dgate and dup unless nil) and the two bf16 copies, reading
// dout as float32 or (doutBF) bfloat16.
func (t *trafficBackend) SwiGLUBackwardSetRounded(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int) {
	t.run("SwiGLUBackwardSetRounded", gatedSetRoundedL("swiglu_backward_set_bf16", dgate != nil, act != nil, actBF != nil, doutBF != nil, n), func(be kernels.Backend) {
		be.(kernels.DoutRounder).SwiGLUBackwardSetRounded(dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up, n)
	})
}

func (t *trafficBackend) GeGLUBackwardSetRounded(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int) {
	t.run("GeGLUBackwardSetRounded", gatedSetRoundedL("geglu_backward_set_bf16", dgate != nil, act != nil, actBF != nil, doutBF != nil, n), func(be kernels.Backend) {
		be.(kernels.DoutRounder).GeGLUBackwardSetRounded(dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up, n)
	})
}

func gatedSetRoundedL(kernel string, withF32, withAct, withActBF, doutBF bool, n int) []launch {
	l := gatedSetL(kernel, withAct, n)
	if doutBF {
		l[0].read -= int64((f32 - b16) * n)
	}
	l[0].wrote += int64(b16 * 2 * n)
	if !withF32 {
		l[0].wrote -= int64(f32 * 2 * n)
	}
	if withActBF {
		l[0].wrote += int64(b16 * n)
	}
	return l
}

var _ kernels.InputRounder = (*trafficBackend)(nil)

// RoundsLinearInput is cuda.Backend's in PrecisionBF16
// (kernels.InputRounder): the norms and the gated unit write their
// outputs' bf16 roundings, which the products that follow take.
func (t *trafficBackend) RoundsLinearInput() bool { return true }

// LinearForwardBF16Rounded is LinearForwardBF16ManyAdd (add nil:
// LinearForwardBF16Many) without its f32_to_bf16 pass: the GEMMs and
// biases alone.
func (t *trafficBackend) LinearForwardBF16Rounded(outs [][]float32, inp []uint16, weights [][]uint16, biases [][]float32, N, C int, OCs []int, add []bool) {
	var ls []launch
	for i, oc := range OCs {
		var beta float32
		if add != nil && add[i] {
			beta = 1
		}
		ls = append(ls, gemmL(N, oc, C, b16, beta))
		ls = append(ls, biasL(biases != nil && biases[i] != nil, N, oc)...)
	}
	t.run("LinearForwardBF16Rounded", ls, func(be kernels.Backend) {
		be.(kernels.InputRounder).LinearForwardBF16Rounded(outs, inp, weights, biases, N, C, OCs, add)
	})
}

// RMSNormForwardRounded is one kernel writing RMSNormForward's outputs and
// out's bf16 copy.
func (t *trafficBackend) RMSNormForwardRounded(out, rstd []float32, outBF []uint16, inp, weight []float32, N, C int, eps float32) {
	ls := []launch{flat("rmsnorm_forward_bf16", f32*(N*C+C), f32*(N*C+N)+b16*N*C)}
	t.run("RMSNormForwardRounded", ls, func(be kernels.Backend) {
		be.(kernels.InputRounder).RMSNormForwardRounded(out, rstd, outBF, inp, weight, N, C, eps)
	})
}

var _ kernels.ResidualNormer = (*trafficBackend)(nil)

// AddRMSNormForward is one kernel reading both addends and the norm's
// weight, and writing the sum, RMSNormForward's outputs and, when asked,
// out's bf16 copy.
func (t *trafficBackend) AddRMSNormForward(sum, out, rstd []float32, outBF []uint16, a, res, weight []float32, N, C int, eps float32) {
	w := f32 * (2*N*C + N)
	if outBF != nil {
		w += b16 * N * C
	}
	ls := []launch{flat("rmsnorm_forward_add", f32*(2*N*C+C), w)}
	t.run("AddRMSNormForward", ls, func(be kernels.Backend) {
		be.(kernels.ResidualNormer).AddRMSNormForward(sum, out, rstd, outBF, a, res, weight, N, C, eps)
	})
}

// SwiGLUForwardRounded is one kernel writing SwiGLUForward's output and
// its bf16 copy.
func (t *trafficBackend) SwiGLUForwardRounded(out []float32, outBF []uint16, gate, up []float32, n int) {
	t.run("SwiGLUForwardRounded", []launch{flat("swiglu_forward_bf16", f32*2*n, f32*n+b16*n)}, func(be kernels.Backend) {
		be.(kernels.InputRounder).SwiGLUForwardRounded(out, outBF, gate, up, n)
	})
}

func (t *trafficBackend) GeGLUForwardRounded(out []float32, outBF []uint16, gate, up []float32, n int) {
	t.run("GeGLUForwardRounded", []launch{flat("geglu_forward_bf16", f32*2*n, f32*n+b16*n)}, func(be kernels.Backend) {
		be.(kernels.InputRounder).GeGLUForwardRounded(out, outBF, gate, up, n)
	})
}

var _ kernels.GatedLoRAForwarder = (*trafficBackend)(nil)

// FusesGatedLoRA is cuda.Backend's in PrecisionBF16.
func (t *trafficBackend) FusesGatedLoRA(R int) bool { return R >= 1 && R <= cuda.GatedLoRAMaxRank }

// GatedLoRAForwardRounded is one kernel (gated_lora.cu) reading gate and
// up once a pass of 16 ranks, and A, and writing act's bf16 copy and u;
// its product on CUDA cores (exact float32).
func (t *trafficBackend) GatedLoRAForwardRounded(actBF []uint16, u []float32, gate, up, a []float32, N, I, R int, scale float32, gelu bool) {
	t.run("GatedLoRAForwardRounded", []launch{gatedLoRAForwardL(gelu, false, N, I, R)}, func(be kernels.Backend) {
		be.(kernels.GatedLoRAForwarder).GatedLoRAForwardRounded(actBF, u, gate, up, a, N, I, R, scale, gelu)
	})
}

// gatedLoRAForwardL is gated_lora.cu's forward kernel (its _bf16in form
// where bf16In): gate and up read once a pass of 16 ranks (2 bytes a value
// where bf16In), A read, act's bf16 copy and u written; its product on
// CUDA cores (exact float32).
func gatedLoRAForwardL(gelu, bf16In bool, N, I, R int) launch {
	kernel, in := "gated_lora_forward_"+map[bool]string{false: "swiglu", true: "geglu"}[gelu], f32
	if bf16In {
		kernel, in = kernel+"_bf16in", b16
	}
	passes := (R + 15) / 16
	l := flat(kernel, in*2*N*I*passes+f32*R*I, b16*N*I+f32*N*R)
	l.flops, l.peak = 2*int64(N)*int64(I)*int64(R), peakF32
	return l
}

// gatedLoRABackwardL is gated_lora.cu's backward kernel (its _bf16in form
// where bf16In): gate and up (2 bytes a value where bf16In), dact (where
// dactBF, 2 bytes), g and DA read once; the roundings of dgate and dup and
// DA written; its product on CUDA cores.
func gatedLoRABackwardL(gelu, bf16In, dactBF bool, N, I, R int) launch {
	kernel, in, dact := "gated_lora_backward_"+map[bool]string{false: "swiglu", true: "geglu"}[gelu], f32, f32
	if bf16In {
		kernel, in = kernel+"_bf16in", b16
	}
	if dactBF {
		dact = b16
	}
	l := flat(kernel, in*2*N*I+dact*N*I+f32*(N*R+R*I), b16*2*N*I+f32*R*I)
	l.flops, l.peak = 2*int64(N)*int64(I)*int64(R), peakF32
	return l
}

var _ kernels.GatedLoRABackwarder = (*trafficBackend)(nil)

// FusesGatedLoRABackward is cuda.Backend's in PrecisionBF16.
func (t *trafficBackend) FusesGatedLoRABackward(R int) bool {
	return R >= 1 && R <= cuda.GatedLoRABackwardMaxRank
}

// GatedLoRABackwardRounded is one kernel (gated_lora.cu) reading gate,
// up, dact, g and DA once and writing the roundings of dgate and dup and
// DA; its product on CUDA cores.
func (t *trafficBackend) GatedLoRABackwardRounded(dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gate, up []float32, N, I, R int, gelu bool) {
	t.run("GatedLoRABackwardRounded", []launch{gatedLoRABackwardL(gelu, false, dactBF != nil, N, I, R)}, func(be kernels.Backend) {
		be.(kernels.GatedLoRABackwarder).GatedLoRABackwardRounded(dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R, gelu)
	})
}

var _ kernels.GateUpRounder = (*trafficBackend)(nil)

// HoldsGateUpBF16 is cuda.Backend's in PrecisionBF16.
func (t *trafficBackend) HoldsGateUpBF16(R int) bool {
	return t.FusesGatedLoRA(R) && t.FusesGatedLoRABackward(R)
}

// LinearForwardBF16RoundedTo is LinearForwardBF16Rounded's GEMMs (no
// biases) storing bfloat16 outputs, and reading them so where they add.
func (t *trafficBackend) LinearForwardBF16RoundedTo(outBFs [][]uint16, inp []uint16, weights [][]uint16, N, C int, OCs []int, add []bool) {
	var ls []launch
	for i, oc := range OCs {
		var beta float32
		if add != nil && add[i] {
			beta = 1
		}
		ls = append(ls, gemmLC(N, oc, C, b16, b16, beta))
	}
	t.run("LinearForwardBF16RoundedTo", ls, func(be kernels.Backend) {
		be.(kernels.GateUpRounder).LinearForwardBF16RoundedTo(outBFs, inp, weights, N, C, OCs, add)
	})
}

// LoRAForwardManyTo is kernels/cuda's (ops_loraforward.go):
// LoRAForwardMany's copies, x product and scale_cols, then per projection
// u and B rounded and the rank-r product on bfloat16 operands storing a
// bfloat16 output.
func (t *trafficBackend) LoRAForwardManyTo(outBFs [][]uint16, us [][]float32, x []float32, as, bs [][]float32, N, In, R int, Outs []int, scale float32) {
	var ls []launch
	for range Outs {
		ls = append(ls, flat("copy_f32", f32*R*In, f32*R*In))
	}
	ls = append(ls, gemmL(N, len(Outs)*R, In, f32, 0))
	for _, out := range Outs {
		ls = append(ls, flat("scale_cols", f32*N*R, f32*N*R),
			flat("f32_to_bf16", f32*N*R, b16*N*R), flat("f32_to_bf16", f32*out*R, b16*out*R),
			gemmLC(N, out, R, b16, b16, 0))
	}
	t.run("LoRAForwardManyTo", ls, func(be kernels.Backend) {
		be.(kernels.GateUpRounder).LoRAForwardManyTo(outBFs, us, x, as, bs, N, In, R, Outs, scale)
	})
}

// GatedLoRAForwardBF16 is GatedLoRAForwardRounded's kernel in its _bf16in
// form, reading gate and up at 2 bytes a value.
func (t *trafficBackend) GatedLoRAForwardBF16(actBF []uint16, u []float32, gateBF, upBF []uint16, a []float32, N, I, R int, scale float32, gelu bool) {
	t.run("GatedLoRAForwardBF16", []launch{gatedLoRAForwardL(gelu, true, N, I, R)}, func(be kernels.Backend) {
		be.(kernels.GateUpRounder).GatedLoRAForwardBF16(actBF, u, gateBF, upBF, a, N, I, R, scale, gelu)
	})
}

// GatedLoRABackwardBF16 is GatedLoRABackwardRounded's kernel in its
// _bf16in form, reading gate and up at 2 bytes a value.
func (t *trafficBackend) GatedLoRABackwardBF16(dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gateBF, upBF []uint16, N, I, R int, gelu bool) {
	t.run("GatedLoRABackwardBF16", []launch{gatedLoRABackwardL(gelu, true, dactBF != nil, N, I, R)}, func(be kernels.Backend) {
		be.(kernels.GateUpRounder).GatedLoRABackwardBF16(dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF, N, I, R, gelu)
	})
}

var _ kernels.LoRAInputRounder = (*trafficBackend)(nil)

// RoundsLoRAInput is cuda.Backend's in PrecisionBF16.
func (t *trafficBackend) RoundsLoRAInput() bool { return true }

// MatmulBF16 is kernels/cuda's (ops_lora.go): each float32 operand rounded
// by f32_to_bf16, then one GEMM on bfloat16 operands.
func (t *trafficBackend) MatmulBF16(c, a []float32, aBF []uint16, b []float32, bBF []uint16, M, N, K int, transA, transB bool, beta float32) {
	var ls []launch
	if a != nil {
		ls = append(ls, flat("f32_to_bf16", f32*M*K, b16*M*K))
	}
	if b != nil {
		ls = append(ls, flat("f32_to_bf16", f32*K*N, b16*K*N))
	}
	ls = append(ls, gemmL(M, N, K, b16, beta))
	t.run("MatmulBF16", ls, func(be kernels.Backend) {
		be.(kernels.LoRAInputRounder).MatmulBF16(c, a, aBF, b, bBF, M, N, K, transA, transB, beta)
	})
}

var _ kernels.DinpRounder = (*trafficBackend)(nil)

// RoundsLinearDinp is cuda.Backend's in PrecisionBF16.
func (t *trafficBackend) RoundsLinearDinp() bool { return true }

// LinearBackwardBF16To is LinearBackwardBF16 with a bfloat16 dinp: dout
// rounded, then one GEMM storing (and at beta 1 reading) a bfloat16 C.
func (t *trafficBackend) LinearBackwardBF16To(dinpBF []uint16, dout []float32, weight []uint16, N, C, OC int, beta float32) {
	ls := []launch{flat("f32_to_bf16", f32*N*OC, b16*N*OC), gemmLC(N, C, OC, b16, b16, beta)}
	t.run("LinearBackwardBF16To", ls, func(be kernels.Backend) {
		be.(kernels.DinpRounder).LinearBackwardBF16To(dinpBF, dout, weight, N, C, OC, beta)
	})
}

// LinearBackwardBF16ToRounded is LinearBackwardBF16To's GEMM alone.
func (t *trafficBackend) LinearBackwardBF16ToRounded(dinpBF, doutBF, weight []uint16, N, C, OC int, beta float32) {
	t.run("LinearBackwardBF16ToRounded", []launch{gemmLC(N, C, OC, b16, b16, beta)}, func(be kernels.Backend) {
		be.(kernels.DinpRounder).LinearBackwardBF16ToRounded(dinpBF, doutBF, weight, N, C, OC, beta)
	})
}

// MatmulBF16To is MatmulBF16 with a bfloat16 C.
func (t *trafficBackend) MatmulBF16To(cBF []uint16, a []float32, aBF []uint16, b []float32, bBF []uint16, M, N, K int, transA, transB bool, beta float32) {
	var ls []launch
	if a != nil {
		ls = append(ls, flat("f32_to_bf16", f32*M*K, b16*M*K))
	}
	if b != nil {
		ls = append(ls, flat("f32_to_bf16", f32*K*N, b16*K*N))
	}
	ls = append(ls, gemmLC(M, N, K, b16, b16, beta))
	t.run("MatmulBF16To", ls, func(be kernels.Backend) {
		be.(kernels.DinpRounder).MatmulBF16To(cBF, a, aBF, b, bBF, M, N, K, transA, transB, beta)
	})
}

var _ kernels.LoRAManyBackwarder = (*trafficBackend)(nil)

// LoRABackwardMany is kernels/cuda's (ops_lora.go): per projection the
// DB product and the dout·B product into the shared g; one DA product
// over x, an axpy a projection into DA; with dx, a scale of each A into
// the concatenated A and one dx product.
func (t *trafficBackend) LoRABackwardMany(dx []float32, douts, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool) {
	var ls []launch
	for _, out := range Outs {
		ls = append(ls, matmulL(out, R, N, 1))
	}
	for _, out := range Outs {
		ls = append(ls, matmulL(N, R, out, 0))
	}
	ls = append(ls, loraTailL(dx != nil, N, In, R, len(Outs), set)...)
	t.run("LoRABackwardMany", ls, func(be kernels.Backend) {
		be.(kernels.LoRAManyBackwarder).LoRABackwardMany(dx, douts, us, x, as, bs, das, dbs, N, In, R, Outs, scale, set)
	})
}

// loraTailL is the DA and dx products of LoRABackwardMany (and
// LoRABackwardManyRounded) of k projections: one DA product over x, an
// axpy a projection; with dx a scale a projection and one dx product.
func loraTailL(withDx bool, N, In, R, k int, set bool) []launch {
	return loraTailLX(withDx, false, N, In, R, k, set)
}

// loraTailLX is loraTailL, with xBF (NormInputRounder's
// LoRABackwardManyInputBF16) x bfloat16: g rounded, then the DA product on
// bfloat16 operands.
func loraTailLX(withDx, xBF bool, N, In, R, k int, set bool) []launch {
	kR := k * R
	ls := []launch{matmulL(kR, In, N, 0)}
	if xBF {
		ls = []launch{flat("f32_to_bf16", f32*N*kR, b16*N*kR), gemmL(kR, In, N, b16, 0)}
	}
	for range k {
		ls = append(ls, flat("axpy", f32*2*R*In, f32*R*In))
	}
	if withDx {
		for range k {
			ls = append(ls, flat("scale", f32*R*In, f32*R*In))
		}
		var beta float32 = 1
		if set {
			beta = 0
		}
		ls = append(ls, matmulL(N, In, kR, beta))
	}
	return ls
}

var _ kernels.LoRAManyForwarder = (*trafficBackend)(nil)

// LoRAForwardMany is kernels/cuda's (ops_loraforward.go): each A copied
// into the concatenated A, one product over x, then per projection its u
// scaled out of the product's columns and the rank-r product setting its
// output.
func (t *trafficBackend) LoRAForwardMany(outs, us [][]float32, x []float32, as, bs [][]float32, N, In, R int, Outs []int, scale float32) {
	var ls []launch
	for range Outs {
		ls = append(ls, flat("copy_f32", f32*R*In, f32*R*In))
	}
	ls = append(ls, gemmL(N, len(Outs)*R, In, f32, 0))
	for _, out := range Outs {
		ls = append(ls, flat("scale_cols", f32*N*R, f32*N*R), matmulL(N, out, R, 0))
	}
	t.run("LoRAForwardMany", ls, func(be kernels.Backend) {
		be.(kernels.LoRAManyForwarder).LoRAForwardMany(outs, us, x, as, bs, N, In, R, Outs, scale)
	})
}

var _ kernels.LoRARoundedBackwarder = (*trafficBackend)(nil)

// RoundsLoRADout is cuda.Backend's in PrecisionBF16.
func (t *trafficBackend) RoundsLoRADout() bool { return true }

// LoRABackwardManyRounded is kernels/cuda's (ops_lora.go): u and B of each
// projection rounded to bfloat16, the DB and dout·B products on bfloat16
// operands, then LoRABackwardMany's DA and dx products.
func (t *trafficBackend) LoRABackwardManyRounded(dx []float32, doutBFs [][]uint16, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool) {
	var ls []launch
	for _, out := range Outs {
		ls = append(ls, flat("f32_to_bf16", f32*N*R, b16*N*R), flat("f32_to_bf16", f32*out*R, b16*out*R))
	}
	for _, out := range Outs {
		ls = append(ls, gemmL(out, R, N, b16, 1))
	}
	for _, out := range Outs {
		ls = append(ls, gemmL(N, R, out, b16, 0))
	}
	ls = append(ls, loraTailL(dx != nil, N, In, R, len(Outs), set)...)
	t.run("LoRABackwardManyRounded", ls, func(be kernels.Backend) {
		be.(kernels.LoRARoundedBackwarder).LoRABackwardManyRounded(dx, doutBFs, us, x, as, bs, das, dbs, N, In, R, Outs, scale, set)
	})
}

var _ kernels.NormInputRounder = (*trafficBackend)(nil)

// RoundsNormInput is cuda.Backend's in PrecisionBF16.
func (t *trafficBackend) RoundsNormInput() bool { return true }

// RMSNormForwardBF16 is rmsnorm_forward_bf16 with a null out: the input
// and weight read, the rounding and rstd written.
func (t *trafficBackend) RMSNormForwardBF16(outBF []uint16, rstd []float32, inp, weight []float32, N, C int, eps float32) {
	ls := []launch{flat("rmsnorm_forward_bf16", f32*(N*C+C), b16*N*C+f32*N)}
	t.run("RMSNormForwardBF16", ls, func(be kernels.Backend) {
		be.(kernels.NormInputRounder).RMSNormForwardBF16(outBF, rstd, inp, weight, N, C, eps)
	})
}

// LoRABackwardManyInputBF16 is kernels/cuda's (ops_lora.go):
// LoRABackwardMany's DB and dout·B products (douts given) or
// LoRABackwardManyRounded's (doutBFs given), then the DA product on x's
// bfloat16 rounding and g's (loraTailLX).
func (t *trafficBackend) LoRABackwardManyInputBF16(dx []float32, douts [][]float32, doutBFs [][]uint16, us [][]float32, xBF []uint16, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool) {
	var ls []launch
	e := f32
	if doutBFs != nil {
		e = b16
		for _, out := range Outs {
			ls = append(ls, flat("f32_to_bf16", f32*N*R, b16*N*R), flat("f32_to_bf16", f32*out*R, b16*out*R))
		}
	}
	prod := func(M, N, K int, beta float32) launch { // float32 douts: Backend.Matmul's rule
		if e == f32 {
			return matmulL(M, N, K, beta)
		}
		return gemmL(M, N, K, e, beta)
	}
	for _, out := range Outs {
		ls = append(ls, prod(out, R, N, 1))
	}
	for _, out := range Outs {
		ls = append(ls, prod(N, R, out, 0))
	}
	ls = append(ls, loraTailLX(dx != nil, true, N, In, R, len(Outs), set)...)
	t.run("LoRABackwardManyInputBF16", ls, func(be kernels.Backend) {
		be.(kernels.NormInputRounder).LoRABackwardManyInputBF16(dx, douts, doutBFs, us, xBF, as, bs, das, dbs, N, In, R, Outs, scale, set)
	})
}

func (t *trafficBackend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	ls := []launch{flat("rmsnorm_forward", f32*(N*C+C), f32*(N*C+N))}
	t.run("RMSNormForward", ls, func(be kernels.Backend) { be.RMSNormForward(out, rstd, inp, weight, N, C, eps) })
}

func (t *trafficBackend) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	if dweight != nil {
		panic("trafficBackend: RMSNormBackward with dweight is not modelled")
	}
	// dout, inp and dinp (accumulated), rstd, weight.
	ls := []launch{flat("rmsnorm_backward", f32*(3*N*C+N+C), f32*N*C)}
	t.run("RMSNormBackward", ls, func(be kernels.Backend) { be.RMSNormBackward(dinp, dweight, dout, rstd, inp, weight, N, C) })
}

var _ kernels.NormDoutRounder = (*trafficBackend)(nil)

// RMSNormBackwardRounded is RMSNormBackward's kernel writing dinp's bf16
// copy too.
func (t *trafficBackend) RMSNormBackwardRounded(dinp, dweight []float32, dinpBF []uint16, dout, rstd, inp, weight []float32, N, C int) {
	if dweight != nil {
		panic("trafficBackend: RMSNormBackwardRounded with dweight is not modelled")
	}
	ls := []launch{flat("rmsnorm_backward_bf16", f32*(3*N*C+N+C), f32*N*C+b16*N*C)}
	t.run("RMSNormBackwardRounded", ls, func(be kernels.Backend) {
		be.(kernels.NormDoutRounder).RMSNormBackwardRounded(dinp, dweight, dinpBF, dout, rstd, inp, weight, N, C)
	})
}

func (t *trafficBackend) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	ls := []launch{flat("rope_forward", f32*(N*H*D+N+len(invFreq)), f32*N*H*D)}
	t.run("RoPEForward", ls, func(be kernels.Backend) { be.RoPEForward(out, inp, pos, invFreq, N, H, D) })
}

func (t *trafficBackend) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	ls := []launch{flat("rope_backward", f32*(2*N*H*D+N+len(invFreq)), f32*N*H*D)}
	t.run("RoPEBackward", ls, func(be kernels.Backend) { be.RoPEBackward(dinp, dout, pos, invFreq, N, H, D) })
}

var _ kernels.RoPESetter = (*trafficBackend)(nil)

// RoPEBackwardSet is kernels/cuda's (kernels.RoPESetter): one kernel
// writing dinp.
func (t *trafficBackend) RoPEBackwardSet(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	ls := []launch{flat("rope_backward_set", f32*(N*H*D+N+len(invFreq)), f32*N*H*D)}
	t.run("RoPEBackwardSet", ls, func(be kernels.Backend) { kernels.RoPEBackwardSet(be, dinp, dout, pos, invFreq, N, H, D) })
}

func (t *trafficBackend) SwiGLUForward(out, gate, up []float32, n int) {
	t.run("SwiGLUForward", []launch{flat("swiglu_forward", f32*2*n, f32*n)}, func(be kernels.Backend) { be.SwiGLUForward(out, gate, up, n) })
}

func (t *trafficBackend) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	// dout, gate, up, and dgate and dup (accumulated).
	ls := []launch{flat("swiglu_backward", f32*5*n, f32*2*n)}
	t.run("SwiGLUBackward", ls, func(be kernels.Backend) { be.SwiGLUBackward(dgate, dup, dout, gate, up, n) })
}

var _ kernels.GatedSetter = (*trafficBackend)(nil)

// SwiGLUBackwardSet is kernels/cuda's (kernels.GatedSetter): one kernel
// writing dgate, dup and, unless nil, act.
func (t *trafficBackend) SwiGLUBackwardSet(dgate, dup, act, dout, gate, up []float32, n int) {
	t.run("SwiGLUBackwardSet", gatedSetL("swiglu_backward_set", act != nil, n), func(be kernels.Backend) {
		kernels.SwiGLUBackwardSet(be, dgate, dup, act, dout, gate, up, n)
	})
}

func (t *trafficBackend) GeGLUBackwardSet(dgate, dup, act, dout, gate, up []float32, n int) {
	t.run("GeGLUBackwardSet", gatedSetL("geglu_backward_set", act != nil, n), func(be kernels.Backend) {
		kernels.GeGLUBackwardSet(be, dgate, dup, act, dout, gate, up, n)
	})
}

func gatedSetL(kernel string, withAct bool, n int) []launch {
	w := 2 * n
	if withAct {
		w += n
	}
	return []launch{flat(kernel, f32*3*n, f32*w)}
}

// attentionL is the least an attention kernel moves: every operand once.
// The kernels run (tc1, tc2, gemm, f32: ops_attention.go) read the keys
// and values again for each block of queries; another change replaces
// them, so they are only accounted at this floor, as "attention". Their
// products are the conventional causal count (kernels/cuda's profile):
// 2·T²·D·H a sequence of T tokens forward, 5·T²·D·H backward, on the
// tensor cores.
func (t *trafficBackend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	ls := []launch{{"attention", f32 * int64(N*H*D+2*N*KVH*D+len(seqOff)), f32 * int64(N*H*D+N*H), 2 * causalSquares(seqOff) * int64(D*H), peakBF16}}
	t.run("AttentionForward", ls, func(be kernels.Backend) { be.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale) })
}

func (t *trafficBackend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	qd, kvd := N*H*D, N*KVH*D
	// dout, out, lse, q, k, v, and dq, dk, dv (accumulated).
	ls := []launch{{"attention", f32 * int64(3*qd+N*H+2*kvd+qd+2*kvd+len(seqOff)), f32 * int64(qd+2*kvd), 5 * causalSquares(seqOff) * int64(D*H), peakBF16}}
	t.run("AttentionBackward", ls, func(be kernels.Backend) {
		be.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
	})
}

// causalSquares is Σ T² over the sequences of seqOff.
func causalSquares(seqOff []int32) int64 {
	var q int64
	for s := 0; s+1 < len(seqOff); s++ {
		T := int64(seqOff[s+1] - seqOff[s])
		q += T * T
	}
	return q
}

func (t *trafficBackend) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	ls := []launch{flat("embedding_forward_bf16", 4*N+b16*N*C, f32*N*C)}
	t.run("EmbeddingForwardBF16", ls, func(be kernels.Backend) { be.EmbeddingForwardBF16(out, ids, table, N, C, V) })
}

// LogprobForwardBF16 follows kernels/cuda's planLogprobW in the bf16
// precision: hidden rounded once; per chunk of cl vocabulary rows the
// logits' GEMM, logprob_chunk, and with expect its rescale (after the
// first chunk), the logits rounded and the expect GEMM; logprob_finish and
// logprob_expect. The per-row state (5·N values) is not counted.
func (t *trafficBackend) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	cl := chunk
	if cl <= 0 {
		cl = cuda.DefaultLogprobChunk
	}
	cl = max(1, min(cl, V))
	ls := []launch{flat("f32_to_bf16", f32*N*C, b16*N*C)}
	for j0 := 0; j0 < V; j0 += cl {
		l := min(cl, V-j0)
		ls = append(ls, gemmL(N, l, C, b16, 0), flat("logprob_chunk", f32*N*l+4*N, 0))
		if expect != nil {
			var beta float32
			if j0 > 0 {
				beta = 1
				ls = append(ls, flat("expect_scale", f32*N*C, f32*N*C))
			}
			ls = append(ls, flat("f32_to_bf16", f32*N*l, b16*N*l), gemmL(N, C, l, b16, beta))
		}
	}
	ls = append(ls, flat("logprob_finish", 4*N, f32*3*N))
	if expect != nil {
		ls = append(ls, flat("logprob_expect", f32*N*C, f32*N*C))
	}
	t.run("LogprobForwardBF16", ls, func(be kernels.Backend) {
		be.LogprobForwardBF16(logprob, entropy, lse, expect, hidden, weight, targets, N, C, V, chunk)
	})
}

// LogprobBackwardExpectBF16 is one row kernel: dhidden += dlogprob·(the
// target's weight row − expect).
func (t *trafficBackend) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	ls := []launch{flat("logprob_bwd_expect_bf16", f32*(2*N*C+N)+b16*N*C+4*N, f32*N*C)}
	t.run("LogprobBackwardExpectBF16", ls, func(be kernels.Backend) {
		be.LogprobBackwardExpectBF16(dhidden, dlogprob, expect, weight, targets, N, C, V)
	})
}

func (t *trafficBackend) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	t.run("AdamW", []launch{flat("adamw", f32*4*n, f32*3*n)}, func(be kernels.Backend) { be.AdamW(param, grad, m, v, n, step, h) })
}

func (t *trafficBackend) Add(out, a, b []float32, n int) {
	t.run("Add", []launch{flat("add", f32*2*n, f32*n)}, func(be kernels.Backend) { be.Add(out, a, b, n) })
}

func (t *trafficBackend) Scale(out, a []float32, s float32, n int) {
	t.run("Scale", []launch{flat("scale", f32*n, f32*n)}, func(be kernels.Backend) { be.Scale(out, a, s, n) })
}

func (t *trafficBackend) AXPY(out, a []float32, s float32, n int) {
	t.run("AXPY", []launch{flat("axpy", f32*2*n, f32*n)}, func(be kernels.Backend) { be.AXPY(out, a, s, n) })
}

func (t *trafficBackend) Copy(dst, src []float32, n int) {
	t.run("Copy", []launch{flat("copy_f32", f32*n, f32*n)}, func(be kernels.Backend) { be.Copy(dst, src, n) })
}

func (t *trafficBackend) Zero(x []float32, n int) {
	t.run("Zero", []launch{flat("zero_f32", 0, f32*n)}, func(be kernels.Backend) { be.Zero(x, n) })
}

// opTotal sums the records of one op; bound is the part of its bytes its
// bandwidth-bound launches move.
type opTotal struct {
	op              string
	calls, launches int
	read, wrote     int64
	bound           int64
}

func (o opTotal) bytes() int64 { return o.read + o.wrote }

// plus returns o with mult times p's figures added (o's name kept).
func (o opTotal) plus(p opTotal, mult int) opTotal {
	m := int64(mult)
	o.calls += mult * p.calls
	o.launches += mult * p.launches
	o.read += m * p.read
	o.wrote += m * p.wrote
	o.bound += m * p.bound
	return o
}

// total sums records by op.
func total(recs []opRecord) map[string]*opTotal {
	m := map[string]*opTotal{}
	for _, r := range recs {
		o := m[r.op]
		if o == nil {
			o = &opTotal{op: r.op}
			m[r.op] = o
		}
		o.calls++
		o.launches += len(r.launches)
		for _, l := range r.launches {
			o.read += l.read
			o.wrote += l.wrote
			if l.bandwidthBound() {
				o.bound += l.read + l.wrote
			}
		}
	}
	return m
}

// stepTraffic runs one LoRA training step as modelbench's trainWorker does
// (ZeroGrad, Forward, Backward with dlogprob = −1/N, AdamW over the
// adapter's tensors) of a model of config c on be, rank r on all seven
// projections, over B sequences of T tokens.
func stepTraffic(t *testing.T, be kernels.Backend, c Config, B, T, r int, opt TrainOptions) {
	t.Helper()
	m, err := NewAs(c, be, DTypeBFloat16)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	lens := make([]int, B)
	for i := range lens {
		lens[i] = T
	}
	b := packed(c.Vocab, lens, 1)
	ad, err := NewAdapter(&m.Config, AdapterConfig{Rank: r, Alpha: float64(2 * r), Targets: AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			for i := range lr.B {
				lr.B[i] = float32(0.1 * rng.NormFloat64())
			}
		}
	}
	if err := ad.Place(be); err != nil {
		t.Fatal(err)
	}
	defer ad.Free()
	N := len(b.IDs)
	dlp := make([]float32, N)
	for i := range dlp {
		dlp[i] = -1 / float32(N)
	}
	// The moments as modelbench's worker (and the trainer) hold them: one
	// allocation each matching the adapter's Flat memory, when it has it.
	var moments [][]float32
	defer func() {
		for _, x := range moments {
			kernels.FreeF32(be, x)
		}
	}()
	flatP, flatG := ad.Flat()
	alloc := func(n int) {
		for range 2 {
			x, err := kernels.AllocF32(be, n)
			if err != nil {
				t.Fatal(err)
			}
			moments = append(moments, x)
		}
	}
	if flatP != nil {
		alloc(len(flatP))
	} else {
		ad.Params(func(_ string, param, _ []float32) { alloc(len(param)) })
	}
	ctx := context.Background()
	ad.ZeroGrad()
	p, err := m.Forward(ctx, b, ad, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(ctx, dlp, nil); err != nil {
		t.Fatal(err)
	}
	p.Release()
	if flatP != nil {
		be.AdamW(flatP, flatG, moments[0], moments[1], len(flatP), 1, kernels.DefaultAdamW(1e-4))
	} else {
		i := 0
		ad.Params(func(_ string, param, grad []float32) {
			be.AdamW(param, grad, moments[i], moments[i+1], len(param), 1, kernels.DefaultAdamW(1e-4))
			i += 2
		})
	}
	kernels.Synchronize(be)
}

// config7B is Qwen2.5-7B's shape (modelbench's 7b) with L layers.
func config7B(L int) Config {
	return Config{Family: "qwen2", Vocab: 152064, Hidden: 3584, Intermediate: 18944, Layers: L, Heads: 28, KVHeads: 4,
		HeadDim: 128, RMSNormEps: 1e-6, QKVBias: true, RoPE: kernels.RoPEConfig{Theta: 1e6}}
}

// layerTraffic counts a step of c at 1 and 2 layers: one layer's ops are
// the difference, the rest (embedding, head, the model-level backward, the
// once-a-step calls over the whole adapter) what the 1-layer step has
// besides its layer.
func layerTraffic(t *testing.T, c func(L int) Config, B, T, r int, opt TrainOptions) (layer, rest map[string]*opTotal) {
	var steps [2][]opRecord
	for L := 1; L <= 2; L++ {
		tb := &trafficBackend{}
		stepTraffic(t, tb, c(L), B, T, r, opt)
		steps[L-1] = tb.ops
	}
	one, two := total(steps[0]), total(steps[1])
	layer, rest = map[string]*opTotal{}, map[string]*opTotal{}
	for op, o2 := range two {
		o1 := one[op]
		if o1 == nil {
			o1 = &opTotal{op: op}
		}
		d := o2.plus(*o1, -1)
		// An op called once a step over memory that grows with the layers
		// (ZeroGrad's Zero, AdamW over the Flat adapter) has a layer's
		// bytes but no calls of its own.
		if d.calls != 0 || d.bytes() != 0 {
			layer[op] = &d
		}
		r := o1.plus(d, -1)
		if r.calls != 0 || r.bytes() != 0 {
			rest[op] = &r
		}
	}
	return layer, rest
}

// hbm is the memory bandwidth the table's times assume: about an H200's
// (4.8 TB/s peak; memory-bound kernels reach ~4).
const hbm = 4e12

// trafficTable formats per-op figures (sorted by bytes) and their sum.
func trafficTable(ops map[string]*opTotal, mult int) (string, opTotal) {
	var rows []opTotal
	var sum opTotal
	for _, o := range ops {
		x := opTotal{op: o.op}.plus(*o, mult)
		rows = append(rows, x)
		sum = sum.plus(x, 1)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].bytes() != rows[j].bytes() {
			return rows[i].bytes() > rows[j].bytes()
		}
		return rows[i].op < rows[j].op
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "| op | calls | launches | read GB | written GB | ms at 4 TB/s | bandwidth-bound GB | its ms |\n|---|---|---|---|---|---|---|---|\n")
	sum.op = "total"
	for _, o := range append(rows, sum) {
		fmt.Fprintf(&sb, "| %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", o.op, o.calls, o.launches, float64(o.read)/1e9, float64(o.wrote)/1e9,
			float64(o.bytes())/hbm*1e3, float64(o.bound)/1e9, float64(o.bound)/hbm*1e3)
	}
	return sb.String(), sum
}

// TestStepTraffic7B counts the ops, launches and bytes of a LoRA step
// (rank 16 on all seven projections, 8 sequences of 1024 tokens, no
// checkpointing: modelbench's `train --shape 7b --batch 8 --seq 1024
// --rank 16 --dtype bf16 --compute bf16`) on the 7B shape, nothing
// computing, and pins one layer's figures and the whole step's (28
// layers): a change to the model's op sequence that adds traffic fails
// here. The figures are the least each launch must move (see launch), and
// the part of them bandwidth-bound launches move (launch.bandwidthBound);
// the times in the logged table assume 4 TB/s, not a measurement.
func TestStepTraffic7B(t *testing.T) {
	per, step := stepTraffic7B(t, TrainOptions{})
	// Pinned: one layer, and the step. A change to the op sequence that
	// moves more fails; one that moves less updates the figures.
	// The gate and up projections' LinearBackwardBF16 take the bf16
	// copies the gated backward writes (kernels.DoutRounder): 2 launches
	// and 1.24 GB a layer less than rounding dgate and dup again (103,
	// 31650389064; the step 3084, 929991559136). The LoRA backward of q,
	// k and v, and of gate and up, runs as one LoRABackwardMany each
	// (kernels.LoRAManyBackwarder): x read once for their DA products,
	// dx written once for their rank-r products, and no Scale of g: 1
	// launch and 1.06 GB a layer less than one projection at a time (101,
	// 30408875080; the step 3028, 895229167584). The head's vocabulary
	// block on the device is cuda.DefaultLogprobChunk, 16384: 140
	// launches and 14.8 GB a step less than 4096 (the step 3000,
	// 865615808480). With a LoRA the rank-r product u·Bᵀ sets each
	// projection's output and the base product adds onto it
	// (kernels.LinearAdderBF16): the bytes and launches are the same (the
	// base GEMMs read at beta 1 what the rank-r Matmuls no longer read),
	// but those reads move from the bandwidth-bound Matmuls into
	// compute-bound GEMMs' epilogues: 1.63 GB a layer and 45.6 GB a step
	// less bandwidth-bound (22918962248 a layer before, the step
	// 658240374752; then 21291572296 and 612673456096). The two norms and
	// the gated unit write their outputs' bf16 roundings, which q, k, v,
	// gate, up and down take (kernels.InputRounder): 3 launches and 0.86
	// GB a layer less than the products rounding h twice and act again
	// (100, 29351255112, 21291572296 bandwidth-bound; the step 2860,
	// 850817386464, 612673456096). The gate and up projections' LoRA
	// backward takes the bf16 copies of dgate and dup too
	// (kernels.LoRARoundedBackwarder), so the gated backward writes no
	// float32 dgate and dup, and the DB and dout·B products read 2 bytes a
	// value: 2.48 GB a layer less, bandwidth-bound all of it, for 4
	// launches more (u and B rounded) (97, 28495617096, 20435934280; the
	// step 2776, 826859522016, 588715591648). The gated backward rewrites
	// act as bf16 only, and the down projection's DA takes it
	// (kernels.LoRAInputRounder): 0.62 GB a layer less for 1 launch more
	// (g rounded) (101, 26016062536, 17956379720; the step 2888,
	// 757431994336, 519288063968). The attention's output is added into
	// the residual stream by the post-attention norm's kernel
	// (kernels.ResidualNormer), which does not read the sum back: 1
	// launch and 0.12 GB a layer less (102, 25395829832, 17336147016; the
	// step 2916, 740065478624, 501921548256); and so is the MLP's output,
	// by the next layer's input norm (Block.forward's residual left
	// across): 1 launch and 0.12 GB a layer more less (101, 25278389320,
	// 17218706504; the step 2888, 736777144288, 498633213920). The down
	// projection's backward writes dact as bfloat16 only, and the gated
	// backward reads it so (kernels.DinpRounder): its two products store
	// (the second reads) 2 bytes a value where they moved 4, 1.24 GB a
	// layer less, 0.62 GB of it bandwidth-bound (the rank-r product's
	// write and the gated backward's read), for 2 launches more (g and A
	// rounded) (100, 25160948808, 17101265992; the step 2860,
	// 733488809952, 495344879584). The LoRA forward of q, k and v, and of
	// gate and up, runs as one LoRAForwardMany each
	// (kernels.LoRAManyForwarder): x read once for their x·Aᵀ products,
	// not once a projection: 0.35 GB a layer less for 2 launches more
	// (the A's copied side by side) (102, 23921171528, 16482245704; the
	// step 2916, 698775046112, 478012311520). The roofline then took the
	// TF32 products' peak for what it is (peakTF32): the same bytes, 0.24
	// GB a layer more of them bandwidth-bound (16012516424 a layer, the
	// step 464859891680). The backward's recompute of each normed input h
	// writes it as bfloat16 only, and the LoRA DA products of q, k, v
	// and of gate, up multiply its rounding and g's
	// (kernels.NormInputRounder): h written and read at 2 bytes a value
	// where it was 4, twice a layer, 0.23 GB a layer less, bandwidth-bound
	// all of it, for 2 launches more (g rounded) (104, 23571143752,
	// 16251919432; the step 2972, 688974268384, 471563175904). The
	// post-attention norm's backward writes the bf16 rounding of the
	// gradient it leaves, which the o projection's base product takes
	// (kernels.NormDoutRounder): 1 launch and 0.12 GB a layer less (106,
	// 23338884168, 16019659848; the step 3028, 682471000032,
	// 465059907552). So does each input norm's backward for the down
	// projection's product of the block below (the final norm's for the
	// last block's), which writes dact as bf16 (kernels.DinpRounder's
	// LinearBackwardBF16ToRounded): 1 launch and 0.12 GB a layer less
	// (105, 23221443656, 15902219336; the step 3000, 679182665696,
	// 461771573216).
	// The TF32 peak then went only to the products that run on TF32
	// (matmulL: Backend.Matmul's rule); LinearForward's and
	// LoRAForwardMany's x products are exact cublasSgemm, back at
	// float32's peak and compute-bound: the same bytes, 0.12 GB a layer
	// less bandwidth-bound (15784778824; the step 458483238880).
	// The gated unit computes the down projection's u = Scale·act·Aᵀ
	// itself (kernels.GatedLoRAForwarder) and writes act as bf16 only:
	// act's float32 write and the x product's read of it gone, 1.24 GB a
	// layer less, all bandwidth-bound, and 2 launches (LinearForward,
	// Scale) (104, 23104003144, 15665077320; the step 2972,
	// 675894331360, 455131596768). The gated backward adds the down
	// projection's DA product itself (kernels.GatedLoRABackwarder) and
	// writes no act: its bf16 write and the DA product's read gone, 0.62
	// GB a layer less, and 2 launches (g rounded, the GEMM) (102,
	// 21861440584, 14422514760; the step 2916, 641102579680,
	// 420339845088).
	const wantLayerLaunches, wantLayerBytes = 100, int64(21240159304)
	const wantStepLaunches, wantStepBytes = 2860, int64(623706703840)
	const wantLayerBound, wantStepBound = int64(13801233480), int64(402943969248)
	pinTraffic(t, "", per, step, [3]int64{wantLayerLaunches, wantLayerBytes, wantLayerBound}, [3]int64{wantStepLaunches, wantStepBytes, wantStepBound})

	// With TrainOptions.GateUpBF16 the gate and up projections' outputs
	// are held as bfloat16 (kernels.GateUpRounder): their GEMMs store them
	// rounded (the LoRA terms too, before the base products add onto
	// them), and the fused gated unit and gated backward read them at 2
	// bytes a value: 1.24 GB a layer less written (the rank-r and base
	// products' stores) and 1.86 GB less read (the base products'
	// epilogues, the gated unit, the gated backward), 3.1 GB in all, 1.86
	// GB of it bandwidth-bound, for 4 launches more (u and B rounded for
	// each rank-r product).
	per, step = stepTraffic7B(t, TrainOptions{GateUpBF16: true})
	pinTraffic(t, "GateUpBF16: ", per, step, [3]int64{104, 18139847752, 11942435912}, [3]int64{2972, 536897980384, 350897637344})
}

// pinTraffic fails unless one 7B layer's figures per and the step's are
// the pinned ones, each {launches, bytes, bandwidth-bound bytes}.
func pinTraffic(t *testing.T, what string, per, step opTotal, layer, whole [3]int64) {
	t.Helper()
	for _, c := range []struct {
		name string
		got  opTotal
		want [3]int64
	}{{"one 7B layer", per, layer}, {"7B step", step, whole}} {
		if got := [3]int64{int64(c.got.launches), c.got.bytes(), c.got.bound}; got != c.want {
			t.Errorf("%s%s: %d launches, %d bytes, %d of them bandwidth-bound; pinned %d, %d, %d",
				what, c.name, got[0], got[1], got[2], c.want[0], c.want[1], c.want[2])
		}
	}
}

// stepTraffic7B is TestStepTraffic7B's count of one 7B layer and the whole
// step under opt, its tables logged.
func stepTraffic7B(t *testing.T, opt TrainOptions) (per, step opTotal) {
	const B, T, r = 8, 1024, 16
	layer, rest := layerTraffic(t, config7B, B, T, r, opt)
	tab, per := trafficTable(layer, 1)
	t.Logf("%+v, one layer of the 7B shape:\n%s", opt, tab)
	tab, _ = trafficTable(rest, 1)
	t.Logf("the rest of the step (embedding, head, model-level backward):\n%s", tab)
	all := map[string]*opTotal{}
	merge := func(m map[string]*opTotal, mult int) {
		for op, o := range m {
			a := all[op]
			if a == nil {
				a = &opTotal{op: op}
				all[op] = a
			}
			*a = a.plus(*o, mult)
		}
	}
	merge(layer, 28)
	merge(rest, 1)
	tab, step = trafficTable(all, 1)
	t.Logf("%+v, the whole step, 28 layers:\n%s", opt, tab)
	return per, step
}

// TestStepTrafficCUDAEmulated checks trafficBackend's launch model against
// cuda.Backend in the bf16 precision on the emulated device: a LoRA step
// of a micro qwen2 model (bias on q, k, v; two layers), and after every
// op, the kernels the driver launched (names, as a multiset) and the GEMMs
// the fake cuBLAS ran (count and bytes, from their shapes, types and beta)
// are the ones the model predicted; with and without
// TrainOptions.GateUpBF16 (the gate and up held as bfloat16 exactly where
// asked). The attention ops are left out (their kernels are another
// change's; trafficBackend counts them at a floor).
func TestStepTrafficCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, drv, blas := emulatedCUDABackendBLAS(t, kernels.PrecisionBF16)
	defer b.Close()
	nl, ng := 0, 0
	checked := 0
	tb := &trafficBackend{Backend: b}
	tb.check = func(op string, want []launch) {
		ls, gs, ts := drv.Launches(), blas.Gemms(), blas.GemmTypes()
		newL, newG, newT := ls[nl:], gs[ng:], ts[ng:]
		nl, ng = len(ls), len(gs)
		if strings.HasPrefix(op, "Attention") {
			return
		}
		checked++
		var wantK, gotK []string
		var wantG []launch
		for _, l := range want {
			if l.kernel == "gemm" {
				wantG = append(wantG, l)
			} else {
				wantK = append(wantK, l.kernel)
			}
		}
		for _, l := range newL {
			gotK = append(gotK, l.Kernel)
		}
		slices.Sort(wantK)
		slices.Sort(gotK)
		if !slices.Equal(wantK, gotK) {
			t.Errorf("%s: launched %v, modelled %v", op, gotK, wantK)
		}
		if len(newG) != len(wantG) {
			t.Errorf("%s: %d GEMMs, modelled %d", op, len(newG), len(wantG))
			return
		}
		for i, g := range newG {
			e, peak := int64(f32), peakF32
			switch {
			case newT[i].A == cuda.R16BF:
				e, peak = b16, peakBF16
			case newT[i].Compute == cuda.Compute32FFastTF32:
				peak = peakTF32
			}
			ec := int64(f32)
			if newT[i].C == cuda.R16BF {
				ec = b16
			}
			batch := int64(max(g.Batch, 1))
			got := launch{"gemm", batch * e * int64(g.M*g.K+g.K*g.N), batch * ec * int64(g.M*g.N), batch * 2 * int64(g.M) * int64(g.N) * int64(g.K), peak}
			if g.Beta != 0 {
				got.read += batch * ec * int64(g.M*g.N)
			}
			if got != wantG[i] {
				t.Errorf("%s: GEMM %d moves %d+%d bytes, %d FLOPs at %g (m %d n %d k %d beta %g), modelled %d+%d, %d at %g",
					op, i, got.read, got.wrote, got.flops, got.peak, g.M, g.N, g.K, g.Beta, wantG[i].read, wantG[i].wrote, wantG[i].flops, wantG[i].peak)
			}
		}
	}
	c := microConfig("qwen2")
	c.TieEmbeddings = false
	for _, opt := range []TrainOptions{{}, {GateUpBF16: true}} {
		tb.ops = nil
		stepTraffic(t, tb, c, 2, 5, 2, opt)
		if !slices.ContainsFunc(tb.ops, func(o opRecord) bool { return o.op == "GatedLoRAForwardBF16" }) == opt.GateUpBF16 {
			t.Errorf("%+v: GatedLoRAForwardBF16 ran: %v", opt, !opt.GateUpBF16)
		}
	}
	if checked == 0 {
		t.Fatal("no op checked")
	}
	t.Logf("%d ops checked, %d kernel launches, %d GEMMs", checked, nl, ng)
}
