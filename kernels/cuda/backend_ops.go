package cuda

import (
	"fmt"
	"strconv"

	"github.com/hone-rl/hone/kernels"
)

// Backend's ops: each checks its arguments as kernels/ref does (the same
// panics), then runs on the device (onDevice: Ops' kernels, cuBLAS).

// ---- matrix products: cuBLAS ------------------------------------------------

// scaleC is c = beta·c, the product of an empty inner dimension (K = 0).
func (b *Backend) scaleC(c *Buffer, beta float32, n int) error {
	switch beta {
	case 0: // ignores c's contents, NaN included
		return c.fill(0)
	case 1:
		return nil
	}
	return b.ops.Scale(c, c, beta, n)
}

// TF32MinK is the least inner dimension K at which Backend.Matmul runs on
// TF32 tensor cores in the bf16 precision (Device.MatmulTF32). In the LoRA
// step the products with a long K are the gradients' (DB += doutᵀ·u and
// DA += gᵀ·x over the N tokens, g = dout·B over the layer's outputs):
// skinny outputs, long sums, where cublasSgemm was slow on the H200
// (gpucheck/RESULTS.md). The rank-r products (the forward's out += u·Bᵀ,
// dx += g·A; K = r ≤ 64 in practice) do 2r flops per output element they
// read and write, bound by memory, not by arithmetic, so tensor cores gain
// them little; they stay exact float32, and with them the LoRA path's share
// of the logprobs: with TF32 there too, the emulated llama golden's bf16
// logprob error rose from max 0.027 to 0.040, past PyTorch autocast's 0.029
// (train/model TestBF16ComputeCUDAEmulated).
const TF32MinK = 128

func (b *Backend) Matmul(c, a, bm []float32, M, N, K int, transA, transB bool, beta float32) {
	const op = "Matmul"
	kernels.NeedSizes(op, M, N, K)
	kernels.Need(op, "c", len(c), M*N)
	kernels.Need(op, "a", len(a), M*K)
	kernels.Need(op, "b", len(bm), K*N)
	if M*N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return matmulCost(M, N, K) }, func() error {
		cb := b.f32(op, "c", c)
		if K == 0 {
			return b.scaleC(cb, beta, M*N)
		}
		if b.ops.Precision() == kernels.PrecisionBF16 && K >= TF32MinK { // the LoRA gradients on TF32 tensor cores
			return b.d.MatmulTF32(cb, b.f32(op, "a", a), b.f32(op, "b", bm), M, N, K, transA, transB, beta)
		}
		return b.d.Matmul(cb, b.f32(op, "a", a), b.f32(op, "b", bm), M, N, K, transA, transB, beta)
	})
}

func (b *Backend) MatmulBatched(c, a, bm []float32, batch, M, N, K int, transA, transB bool, beta float32) {
	const op = "MatmulBatched"
	kernels.NeedSizes(op, batch, M, N, K)
	kernels.Need(op, "c", len(c), batch*M*N)
	kernels.Need(op, "a", len(a), batch*M*K)
	kernels.Need(op, "b", len(bm), batch*K*N)
	if batch*M*N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return matmulBatchedCost(batch, M, N, K) }, func() error {
		cb := b.f32(op, "c", c)
		if K == 0 {
			return b.scaleC(cb, beta, batch*M*N)
		}
		return b.d.MatmulBatched(cb, b.f32(op, "a", a), b.f32(op, "b", bm), batch, M, N, K, transA, transB, beta)
	})
}

// ---- normalisation, position, activation: Ops -------------------------------

func (b *Backend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	const op = "RMSNormForward"
	kernels.NeedRMSNorm(op, out, rstd, inp, weight, N, C)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.RMSNormForward(b.f32(op, "out", out), b.f32(op, "rstd", rstd), b.f32(op, "inp", inp), b.f32(op, "weight", weight), N, C, eps)
	})
}

func (b *Backend) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	b.rmsNormBackward("RMSNormBackward", dinp, dweight, nil, dout, rstd, inp, weight, N, C)
}

var _ kernels.NormDoutRounder = (*Backend)(nil)

// RMSNormBackwardRounded implements kernels.NormDoutRounder
// (rmsnorm_backward_bf16).
func (b *Backend) RMSNormBackwardRounded(dinp, dweight []float32, dinpBF []uint16, dout, rstd, inp, weight []float32, N, C int) {
	kernels.Need("RMSNormBackwardRounded", "dinpBF", len(dinpBF), N*C)
	b.rmsNormBackward("RMSNormBackwardRounded", dinp, dweight, dinpBF, dout, rstd, inp, weight, N, C)
}

// rmsNormBackward is RMSNormBackward, and with dinpBF
// RMSNormBackwardRounded.
func (b *Backend) rmsNormBackward(op string, dinp, dweight []float32, dinpBF []uint16, dout, rstd, inp, weight []float32, N, C int) {
	kernels.NeedRMSNormBackward(op, dinp, dweight, dout, rstd, inp, weight, N, C)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		if dinpBF != nil {
			return b.ops.RMSNormBackwardBF16(b.f32(op, "dinp", dinp), b.f32(op, "dweight", dweight), b.bf16(op, "dinpBF", dinpBF), b.f32(op, "dout", dout),
				b.f32(op, "rstd", rstd), b.f32(op, "inp", inp), b.f32(op, "weight", weight), N, C)
		}
		return b.ops.RMSNormBackward(b.f32(op, "dinp", dinp), b.f32(op, "dweight", dweight), b.f32(op, "dout", dout),
			b.f32(op, "rstd", rstd), b.f32(op, "inp", inp), b.f32(op, "weight", weight), N, C)
	})
}

// rope runs RoPEForward (forward) or a backward (RoPEBackward,
// RoPEBackwardSet) on the device through launch, the Ops method.
func (b *Backend) rope(op string, forward bool, launch func(out, inp, pos, invFreq *Buffer, N, H, D, half int) error, out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	names := kernels.NeedRoPE(op, !forward, out, inp, pos, invFreq, N, H, D)
	half := len(invFreq)
	if N*H*D == 0 {
		return
	}
	b.onDevice(op, func() error {
		o, i, f := b.f32(op, names[0], out), b.f32(op, names[1], inp), b.f32(op, "invFreq", invFreq)
		p := b.edge(op, pos[:N])
		return launch(o, i, p, f, N, H, D, half)
	})
}

func (b *Backend) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.rope("RoPEForward", true, b.ops.RoPEForward, out, inp, pos, invFreq, N, H, D)
}

func (b *Backend) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.rope("RoPEBackward", false, b.ops.RoPEBackward, dinp, dout, pos, invFreq, N, H, D)
}

var _ kernels.RoPESetter = (*Backend)(nil)

// RoPEBackwardSet implements kernels.RoPESetter: rope_backward_set writes
// dinp, sparing the attention's backward a Zero of dq and dk and the
// kernel's read of them (the same values: x = 0 + x).
func (b *Backend) RoPEBackwardSet(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.rope("RoPEBackwardSet", false, b.ops.RoPEBackwardSet, dinp, dout, pos, invFreq, N, H, D)
}

func (b *Backend) SwiGLUForward(out, gate, up []float32, n int) {
	b.gatedForward("SwiGLUForward", b.ops.SwiGLUForward, out, gate, up, n)
}

func (b *Backend) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	b.gatedBackward("SwiGLUBackward", b.ops.SwiGLUBackward, dgate, dup, dout, gate, up, n)
}

var _ kernels.GatedSetter = (*Backend)(nil)

// SwiGLUBackwardSet implements kernels.GatedSetter: swiglu_backward_set
// writes dgate and dup, sparing the model's MLP backward a Zero of each
// and the kernel's read of them (the same values: x = 0 + x), and with
// act the forward's output, sparing it a forward pass reading gate and
// up again.
func (b *Backend) SwiGLUBackwardSet(dgate, dup, act, dout, gate, up []float32, n int) {
	b.gatedBackwardSet("SwiGLUBackwardSet", b.ops.SwiGLUBackwardSet, dgate, dup, act, dout, gate, up, n)
}

// GeGLUBackwardSet implements kernels.GatedSetter (geglu_backward_set), as
// SwiGLUBackwardSet.
func (b *Backend) GeGLUBackwardSet(dgate, dup, act, dout, gate, up []float32, n int) {
	b.gatedBackwardSet("GeGLUBackwardSet", b.ops.GeGLUBackwardSet, dgate, dup, act, dout, gate, up, n)
}

// gatedBackwardSet runs a GatedSetter op through launch, the Ops method,
// after the accumulating op's checks (and act's, unless nil).
func (b *Backend) gatedBackwardSet(op string, launch func(dgate, dup, act, dout, gate, up *Buffer, n int) error, dgate, dup, act, dout, gate, up []float32, n int) {
	kernels.NeedGatedBackward(op, dgate, dup, dout, gate, up, n)
	if act != nil {
		kernels.Need(op, "act", len(act), n)
	}
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		var ba *Buffer
		if act != nil {
			ba = b.f32(op, "act", act)
		}
		return launch(b.f32(op, "dgate", dgate), b.f32(op, "dup", dup), ba, b.f32(op, "dout", dout),
			b.f32(op, "gate", gate), b.f32(op, "up", up), n)
	})
}

var _ kernels.DoutRounder = (*Backend)(nil)

// RoundsLinearDout implements kernels.DoutRounder: in PrecisionBF16
// LinearBackwardBF16 rounds dout by f32_to_bf16 before its GEMM.
func (b *Backend) RoundsLinearDout() bool { return b.Precision() == kernels.PrecisionBF16 }

// SwiGLUBackwardSetRounded implements kernels.DoutRounder
// (swiglu_backward_set_bf16).
func (b *Backend) SwiGLUBackwardSetRounded(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int) {
	b.gatedBackwardSetRounded("SwiGLUBackwardSetRounded", b.ops.SwiGLUBackwardSetBF16, dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up, n)
}

// GeGLUBackwardSetRounded implements kernels.DoutRounder
// (geglu_backward_set_bf16).
func (b *Backend) GeGLUBackwardSetRounded(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int) {
	b.gatedBackwardSetRounded("GeGLUBackwardSetRounded", b.ops.GeGLUBackwardSetBF16, dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up, n)
}

// gatedBackwardSetRounded is gatedBackwardSet with the bf16 copies; dgate
// and dup both nil: the copies (and act) only; actBF: act's copy too;
// doutBF (dout nil): dout read as bfloat16.
func (b *Backend) gatedBackwardSetRounded(op string, launch func(dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up *Buffer, n int) error,
	dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int) {
	noF32 := dgate == nil && dup == nil
	if (dout == nil) == (doutBF == nil) {
		panic(fmt.Sprintf("kernels.%s: want exactly one of dout and doutBF (given: %v, %v)", op, dout != nil, doutBF != nil))
	}
	kernels.NeedSizes(op, n)
	kernels.Need(op, "dout", len(dout)+len(doutBF), n)
	kernels.Need(op, "gate", len(gate), n)
	kernels.Need(op, "up", len(up), n)
	if !noF32 {
		kernels.Need(op, "dgate", len(dgate), n)
		kernels.Need(op, "dup", len(dup), n)
	}
	if act != nil {
		kernels.Need(op, "act", len(act), n)
	}
	if actBF != nil {
		kernels.Need(op, "actBF", len(actBF), n)
	}
	kernels.Need(op, "dgateBF", len(dgateBF), n)
	kernels.Need(op, "dupBF", len(dupBF), n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		var ba, bab, bg, bu *Buffer
		if act != nil {
			ba = b.f32(op, "act", act)
		}
		if actBF != nil {
			bab = b.bf16(op, "actBF", actBF)
		}
		if !noF32 {
			bg, bu = b.f32(op, "dgate", dgate), b.f32(op, "dup", dup)
		}
		var bd, bdb *Buffer
		if dout != nil {
			bd = b.f32(op, "dout", dout)
		} else {
			bdb = b.bf16(op, "doutBF", doutBF)
		}
		return launch(bg, bu, ba, bab, b.bf16(op, "dgateBF", dgateBF), b.bf16(op, "dupBF", dupBF),
			bd, bdb, b.f32(op, "gate", gate), b.f32(op, "up", up), n)
	})
}

// LinearBackwardBF16Rounded implements kernels.DoutRounder: the bf16
// precision's GEMM on the pre-rounded dout (it panics in PrecisionF32).
func (b *Backend) LinearBackwardBF16Rounded(dinp []float32, dout, weight []uint16, N, C, OC int) {
	const op = "LinearBackwardBF16Rounded"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dinp", len(dinp), N*C)
	kernels.Need(op, "dout", len(dout), N*OC)
	kernels.Need(op, "weight", len(weight), OC*C)
	if N*C*OC == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return linearCost(1, N, C, OC) }, func() error {
		return b.ops.LinearBackwardBF16Rounded(b.f32(op, "dinp", dinp), b.bf16(op, "dout", dout), b.bf16(op, "weight", weight), N, C, OC)
	})
}

var _ kernels.InputRounder = (*Backend)(nil)

// RoundsLinearInput implements kernels.InputRounder: in PrecisionBF16
// the bf16 linear products round their input by f32_to_bf16 before the
// GEMM.
func (b *Backend) RoundsLinearInput() bool { return b.Precision() == kernels.PrecisionBF16 }

// RMSNormForwardRounded implements kernels.InputRounder
// (rmsnorm_forward_bf16).
func (b *Backend) RMSNormForwardRounded(out, rstd []float32, outBF []uint16, inp, weight []float32, N, C int, eps float32) {
	kernels.Need("RMSNormForwardRounded", "out", len(out), N*C)
	b.rmsNormForwardBF16("RMSNormForwardRounded", out, rstd, outBF, inp, weight, N, C, eps)
}

// rmsNormForwardBF16 is rmsnorm_forward_bf16 (Ops.RMSNormForwardBF16) for
// RMSNormForwardRounded, and with out nil for NormInputRounder's
// RMSNormForwardBF16 (the rounding alone).
func (b *Backend) rmsNormForwardBF16(op string, out, rstd []float32, outBF []uint16, inp, weight []float32, N, C int, eps float32) {
	kernels.NeedSizes(op, N, C)
	kernels.Need(op, "rstd", len(rstd), N)
	kernels.Need(op, "outBF", len(outBF), N*C)
	kernels.Need(op, "inp", len(inp), N*C)
	kernels.Need(op, "weight", len(weight), C)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.RMSNormForwardBF16(b.f32(op, "out", out), b.f32(op, "rstd", rstd), b.bf16(op, "outBF", outBF),
			b.f32(op, "inp", inp), b.f32(op, "weight", weight), N, C, eps)
	})
}

var _ kernels.ResidualNormer = (*Backend)(nil)

// AddRMSNormForward implements kernels.ResidualNormer
// (rmsnorm_forward_add, Ops.RMSNormForwardAdd).
func (b *Backend) AddRMSNormForward(sum, out, rstd []float32, outBF []uint16, a, res, weight []float32, N, C int, eps float32) {
	const op = "AddRMSNormForward"
	kernels.NeedAddRMSNorm(op, sum, out, rstd, outBF, a, res, weight, N, C)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.RMSNormForwardAdd(b.f32(op, "sum", sum), b.f32(op, "out", out), b.f32(op, "rstd", rstd), b.bf16(op, "outBF", outBF),
			b.f32(op, "a", a), b.f32(op, "res", res), b.f32(op, "weight", weight), N, C, eps)
	})
}

// SwiGLUForwardRounded implements kernels.InputRounder
// (swiglu_forward_bf16).
func (b *Backend) SwiGLUForwardRounded(out []float32, outBF []uint16, gate, up []float32, n int) {
	b.gatedForwardRounded("SwiGLUForwardRounded", b.ops.SwiGLUForwardBF16, out, outBF, gate, up, n)
}

// GeGLUForwardRounded implements kernels.InputRounder
// (geglu_forward_bf16).
func (b *Backend) GeGLUForwardRounded(out []float32, outBF []uint16, gate, up []float32, n int) {
	b.gatedForwardRounded("GeGLUForwardRounded", b.ops.GeGLUForwardBF16, out, outBF, gate, up, n)
}

// gatedForwardRounded is gatedForward with the bf16 copy.
func (b *Backend) gatedForwardRounded(op string, launch func(out, outBF, gate, up *Buffer, n int) error, out []float32, outBF []uint16, gate, up []float32, n int) {
	kernels.NeedGatedForward(op, out, gate, up, n)
	kernels.Need(op, "outBF", len(outBF), n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		return launch(b.f32(op, "out", out), b.bf16(op, "outBF", outBF), b.f32(op, "gate", gate), b.f32(op, "up", up), n)
	})
}

// LinearForwardBF16Rounded implements kernels.InputRounder: the bf16
// precision's GEMMs on the pre-rounded inp (Ops.LinearForwardBF16Rounded;
// it panics in PrecisionF32), after LinearForwardBF16Many's checks of
// each product. The profile counts it as LinearForwardBF16Many
// (linearManyCost).
func (b *Backend) LinearForwardBF16Rounded(outs [][]float32, inp []uint16, weights [][]uint16, biases [][]float32, N, C int, OCs []int, add []bool) {
	const op = "LinearForwardBF16Rounded"
	kernels.NeedLinearMany(op, len(outs), len(weights), len(biases), len(OCs))
	if add != nil && len(add) != len(outs) {
		panic(fmt.Sprintf("kernels.%s: %d outputs, %d add flags", op, len(outs), len(add)))
	}
	bias := func(i int) []float32 {
		if biases == nil {
			return nil
		}
		return biases[i]
	}
	kernels.NeedSizes(op, N, C)
	kernels.Need(op, "inp", len(inp), N*C)
	for i := range outs {
		kernels.NeedSizes(op, OCs[i])
		kernels.Need(op, "out", len(outs[i]), N*OCs[i])
		kernels.Need(op, "weight", len(weights[i]), OCs[i]*C)
		if bias(i) != nil {
			kernels.Need(op, "bias", len(bias(i)), OCs[i])
		}
	}
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return linearManyCost(N, C, OCs) }, func() error {
		bo, bw, bb, ocs, adds := b.linearManyBuffers(op, outs, nil, weights, biases, OCs, add)
		return b.ops.LinearForwardBF16Rounded(bo, b.bf16(op, "inp", inp), bw, bb, N, C, ocs, adds)
	})
}

// LinearForwardBF16RoundedTo implements kernels.GateUpRounder
// (Ops.LinearForwardBF16RoundedTo: LinearForwardBF16Rounded's GEMMs
// storing bfloat16 outputs) after kernels.NeedLinearRoundedTo's checks;
// it panics in PrecisionF32. The profile counts it as
// LinearForwardBF16Many (linearManyCost).
func (b *Backend) LinearForwardBF16RoundedTo(outBFs [][]uint16, inp []uint16, weights [][]uint16, N, C int, OCs []int, add []bool) {
	const op = "LinearForwardBF16RoundedTo"
	kernels.NeedLinearRoundedTo(op, outBFs, inp, weights, N, C, OCs, add)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return linearManyCost(N, C, OCs) }, func() error {
		bo, bw, _, ocs, adds := b.linearManyBuffers(op, nil, outBFs, weights, nil, OCs, add)
		return b.ops.LinearForwardBF16RoundedTo(bo, b.bf16(op, "inp", inp), bw, N, C, ocs, adds)
	})
}

func (b *Backend) GeGLUForward(out, gate, up []float32, n int) {
	b.gatedForward("GeGLUForward", b.ops.GeGLUForward, out, gate, up, n)
}

func (b *Backend) GeGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	b.gatedBackward("GeGLUBackward", b.ops.GeGLUBackward, dgate, dup, dout, gate, up, n)
}

// gatedForward runs a gated unit's forward (SwiGLU, GeGLU) through launch,
// the Ops method, after ref's checks.
func (b *Backend) gatedForward(op string, launch func(out, gate, up *Buffer, n int) error, out, gate, up []float32, n int) {
	kernels.NeedGatedForward(op, out, gate, up, n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		return launch(b.f32(op, "out", out), b.f32(op, "gate", gate), b.f32(op, "up", up), n)
	})
}

// gatedBackward is gatedForward for the backward, which accumulates dgate and dup.
func (b *Backend) gatedBackward(op string, launch func(dgate, dup, dout, gate, up *Buffer, n int) error, dgate, dup, dout, gate, up []float32, n int) {
	kernels.NeedGatedBackward(op, dgate, dup, dout, gate, up, n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		return launch(b.f32(op, "dgate", dgate), b.f32(op, "dup", dup), b.f32(op, "dout", dout),
			b.f32(op, "gate", gate), b.f32(op, "up", up), n)
	})
}

// ---- linear layers: cuBLAS and Ops' bias kernels ------------------------------

// needLinearForward makes ref's checks of a linear forward with a weight of
// weightLen values.
func needLinearForward(op string, out, inp []float32, weightLen int, bias []float32, N, C, OC int) {
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "out", len(out), N*OC)
	kernels.Need(op, "inp", len(inp), N*C)
	kernels.Need(op, "weight", weightLen, OC*C)
	if bias != nil {
		kernels.Need(op, "bias", len(bias), OC)
	}
}

func (b *Backend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	const op = "LinearForward"
	needLinearForward(op, out, inp, len(weight), bias, N, C, OC)
	if N*OC == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return linearCost(1, N, C, OC) }, func() error {
		return b.ops.LinearForward(b.f32(op, "out", out), b.f32(op, "inp", inp), b.f32(op, "weight", weight), b.f32(op, "bias", bias), N, C, OC)
	})
}

func (b *Backend) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	const op = "LinearForwardBF16"
	needLinearForward(op, out, inp, len(weight), bias, N, C, OC)
	if N*OC == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return linearCost(1, N, C, OC) }, func() error {
		return b.ops.LinearForwardBF16(b.f32(op, "out", out), b.f32(op, "inp", inp), b.bf16(op, "weight", weight), b.f32(op, "bias", bias), N, C, OC)
	})
}

var _ kernels.LinearManyBF16er = (*Backend)(nil)

// LinearForwardBF16Many implements kernels.LinearManyBF16er
// (Ops.LinearForwardBF16Many: in the bf16 precision the input is rounded
// once for all the products, not once a product), after
// LinearForwardBF16's checks of each product.
func (b *Backend) LinearForwardBF16Many(outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int) {
	b.linearForwardBF16Many("LinearForwardBF16Many", outs, inp, weights, biases, N, C, OCs, nil)
}

var _ kernels.LinearAdderBF16 = (*Backend)(nil)

// LinearForwardBF16ManyAdd implements kernels.LinearAdderBF16
// (Ops.LinearForwardBF16ManyAdd: the products where add[i] are GEMMs with
// beta 1, which read outs[i] in their epilogue), after
// LinearForwardBF16Many's checks; in both precisions. The profile counts
// it as LinearForwardBF16Many (linearManyCost).
func (b *Backend) LinearForwardBF16ManyAdd(outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int, add []bool) {
	const op = "LinearForwardBF16ManyAdd"
	if len(add) != len(outs) {
		panic(fmt.Sprintf("kernels.%s: %d outputs, %d add flags", op, len(outs), len(add)))
	}
	b.linearForwardBF16Many(op, outs, inp, weights, biases, N, C, OCs, add)
}

// linearForwardBF16Many is LinearForwardBF16Many as op, adding onto
// outs[i] where add[i] (add nil: setting every output).
func (b *Backend) linearForwardBF16Many(op string, outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int, add []bool) {
	kernels.NeedLinearMany(op, len(outs), len(weights), len(biases), len(OCs))
	bias := func(i int) []float32 {
		if biases == nil {
			return nil
		}
		return biases[i]
	}
	for i := range outs {
		needLinearForward(op, outs[i], inp, len(weights[i]), bias(i), N, C, OCs[i])
	}
	if N == 0 {
		return
	}
	if C == 0 && add == nil { // nothing to round: each op as it is
		for i := range outs {
			b.LinearForwardBF16(outs[i], inp, weights[i], bias(i), N, C, OCs[i])
		}
		return
	}
	b.onDeviceCost(op, func() opCost { return linearManyCost(N, C, OCs) }, func() error {
		bo, bw, bb, ocs, adds := b.linearManyBuffers(op, outs, nil, weights, biases, OCs, add)
		if add == nil {
			return b.ops.LinearForwardBF16Many(bo, b.f32(op, "inp", inp), bw, bb, N, C, ocs)
		}
		return b.ops.LinearForwardBF16ManyAdd(bo, b.f32(op, "inp", inp), bw, bb, N, C, ocs, adds)
	})
}

// linearManyBuffers is the device buffers of a many-output product's
// outputs (outs, or outBFs where they are bfloat16: outs nil), weights
// and biases (nil where biases or its entry is), their output sizes and
// add flags (add nil: none), less the outputs of size 0, which have
// nothing to write.
func (b *Backend) linearManyBuffers(op string, outs [][]float32, outBFs [][]uint16, weights [][]uint16, biases [][]float32, OCs []int, add []bool) (bo, bw, bb []*Buffer, ocs []int, adds []bool) {
	for i := range OCs {
		if OCs[i] == 0 {
			continue
		}
		var bias []float32
		if biases != nil {
			bias = biases[i]
		}
		if outs != nil {
			bo = append(bo, b.f32(op, "out", outs[i]))
		} else {
			bo = append(bo, b.bf16(op, "out", outBFs[i]))
		}
		bw = append(bw, b.bf16(op, "weight", weights[i]))
		bb = append(bb, b.f32(op, "bias", bias))
		ocs = append(ocs, OCs[i])
		adds = append(adds, add != nil && add[i])
	}
	return bo, bw, bb, ocs, adds
}

var _ kernels.LoRAManyBackwarder = (*Backend)(nil)

// LoRABackwardMany implements kernels.LoRAManyBackwarder
// (Ops.LoRABackwardMany: one DA product over x and one dx product for all
// the projections; its sums' order there), after
// kernels.NeedLoRAMany's checks.
func (b *Backend) LoRABackwardMany(dx []float32, douts, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool) {
	const op = "LoRABackwardMany"
	kernels.NeedLoRAMany(op, dx, douts, us, x, as, bs, das, dbs, N, In, R, Outs)
	b.onDeviceCost(op, func() opCost { return loraManyCost(N, In, R, Outs, dx != nil) }, func() error {
		return b.ops.LoRABackwardMany(b.f32(op, "dx", dx), b.f32s(op, "dout", douts), b.f32s(op, "u", us), b.f32(op, "x", x), b.f32s(op, "A", as), b.f32s(op, "B", bs),
			b.f32s(op, "dA", das), b.f32s(op, "dB", dbs), N, In, R, Outs, scale, set)
	})
}

// f32s is f32 of each of xs.
func (b *Backend) f32s(op, name string, xs [][]float32) []*Buffer {
	out := make([]*Buffer, len(xs))
	for i, x := range xs {
		out[i] = b.f32(op, name, x)
	}
	return out
}

var _ kernels.LoRAInputRounder = (*Backend)(nil)

// RoundsLoRAInput implements kernels.LoRAInputRounder: in PrecisionBF16,
// whose products multiply bfloat16 operands.
func (b *Backend) RoundsLoRAInput() bool { return b.Precision() == kernels.PrecisionBF16 }

// MatmulBF16 implements kernels.LoRAInputRounder (Ops.MatmulBF16; it
// panics in PrecisionF32), after kernels.NeedMatmulBF16's checks; K 0
// scales c by beta, as Matmul does. The profile counts it as a Matmul
// (matmulCost).
func (b *Backend) MatmulBF16(c, a []float32, aBF []uint16, bm []float32, bBF []uint16, M, N, K int, transA, transB bool, beta float32) {
	const op = "MatmulBF16"
	kernels.NeedMatmulBF16(op, c, a, aBF, bm, bBF, M, N, K)
	if M*N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return matmulCost(M, N, K) }, func() error {
		cb := b.f32(op, "c", c)
		if K == 0 {
			return b.scaleC(cb, beta, M*N)
		}
		ba, bab, bb, bbb := b.bf16Operands(op, a, aBF, bm, bBF)
		return b.ops.MatmulBF16(cb, ba, bab, bb, bbb, M, N, K, transA, transB, beta)
	})
}

// bf16Operands maps the operand pairs of MatmulBF16 and MatmulBF16To to
// their buffers: each of a (float32) and aBF (bfloat16) nil but one, and
// of bm and bBF.
func (b *Backend) bf16Operands(op string, a []float32, aBF []uint16, bm []float32, bBF []uint16) (ba, bab, bb, bbb *Buffer) {
	if a != nil {
		ba = b.f32(op, "a", a)
	} else {
		bab = b.bf16(op, "aBF", aBF)
	}
	if bm != nil {
		bb = b.f32(op, "b", bm)
	} else {
		bbb = b.bf16(op, "bBF", bBF)
	}
	return ba, bab, bb, bbb
}

var _ kernels.DinpRounder = (*Backend)(nil)

// RoundsLinearDinp implements kernels.DinpRounder: in PrecisionBF16, whose
// products on bfloat16 operands can store a bfloat16 C.
func (b *Backend) RoundsLinearDinp() bool { return b.Precision() == kernels.PrecisionBF16 }

// LinearBackwardBF16To implements kernels.DinpRounder
// (Ops.LinearBackwardBF16To; it panics in PrecisionF32, and on a size
// under 1). The profile counts it as LinearBackwardBF16 (linearCost).
func (b *Backend) LinearBackwardBF16To(dinpBF []uint16, dout []float32, weight []uint16, N, C, OC int, beta float32) {
	const op = "LinearBackwardBF16To"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dinpBF", len(dinpBF), N*C)
	kernels.Need(op, "dout", len(dout), N*OC)
	kernels.Need(op, "weight", len(weight), OC*C)
	b.onDeviceCost(op, func() opCost { return linearCost(1, N, C, OC) }, func() error {
		return b.ops.LinearBackwardBF16To(b.bf16(op, "dinpBF", dinpBF), b.f32(op, "dout", dout), b.bf16(op, "weight", weight), N, C, OC, beta)
	})
}

// LinearBackwardBF16ToRounded implements kernels.DinpRounder
// (Ops.LinearBackwardBF16ToRounded; it panics in PrecisionF32, and on a
// size under 1). The profile counts it as LinearBackwardBF16 (linearCost).
func (b *Backend) LinearBackwardBF16ToRounded(dinpBF, doutBF, weight []uint16, N, C, OC int, beta float32) {
	const op = "LinearBackwardBF16ToRounded"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dinpBF", len(dinpBF), N*C)
	kernels.Need(op, "doutBF", len(doutBF), N*OC)
	kernels.Need(op, "weight", len(weight), OC*C)
	b.onDeviceCost(op, func() opCost { return linearCost(1, N, C, OC) }, func() error {
		return b.ops.LinearBackwardBF16ToRounded(b.bf16(op, "dinpBF", dinpBF), b.bf16(op, "doutBF", doutBF), b.bf16(op, "weight", weight), N, C, OC, beta)
	})
}

// MatmulBF16To implements kernels.DinpRounder (Ops.MatmulBF16To; it
// panics in PrecisionF32, and on a size under 1), after
// kernels.NeedMatmulBF16To's checks. The profile counts it as a Matmul
// (matmulCost).
func (b *Backend) MatmulBF16To(cBF []uint16, a []float32, aBF []uint16, bm []float32, bBF []uint16, M, N, K int, transA, transB bool, beta float32) {
	const op = "MatmulBF16To"
	kernels.NeedMatmulBF16To(op, cBF, a, aBF, bm, bBF, M, N, K)
	b.onDeviceCost(op, func() opCost { return matmulCost(M, N, K) }, func() error {
		ba, bab, bb, bbb := b.bf16Operands(op, a, aBF, bm, bBF)
		return b.ops.MatmulBF16To(b.bf16(op, "cBF", cBF), ba, bab, bb, bbb, M, N, K, transA, transB, beta)
	})
}

var _ kernels.LoRARoundedBackwarder = (*Backend)(nil)

// RoundsLoRADout implements kernels.LoRARoundedBackwarder: in
// PrecisionBF16, whose products multiply bfloat16 operands.
func (b *Backend) RoundsLoRADout() bool { return b.Precision() == kernels.PrecisionBF16 }

// LoRABackwardManyRounded implements kernels.LoRARoundedBackwarder
// (Ops.LoRABackwardManyBF16; it panics in PrecisionF32), after
// kernels.NeedLoRAManyRounded's checks.
func (b *Backend) LoRABackwardManyRounded(dx []float32, doutBFs [][]uint16, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool) {
	const op = "LoRABackwardManyRounded"
	kernels.NeedLoRAManyRounded(op, dx, doutBFs, us, x, as, bs, das, dbs, N, In, R, Outs)
	b.onDeviceCost(op, func() opCost { return loraManyCost(N, In, R, Outs, dx != nil) }, func() error {
		bds := make([]*Buffer, len(doutBFs))
		for i, d := range doutBFs {
			bds[i] = b.bf16(op, "dout", d)
		}
		return b.ops.LoRABackwardManyBF16(b.f32(op, "dx", dx), bds, b.f32s(op, "u", us), b.f32(op, "x", x), b.f32s(op, "A", as), b.f32s(op, "B", bs),
			b.f32s(op, "dA", das), b.f32s(op, "dB", dbs), N, In, R, Outs, scale, set)
	})
}

var _ kernels.NormInputRounder = (*Backend)(nil)

// RoundsNormInput implements kernels.NormInputRounder: in PrecisionBF16,
// whose products multiply bfloat16 operands.
func (b *Backend) RoundsNormInput() bool { return b.Precision() == kernels.PrecisionBF16 }

// RMSNormForwardBF16 implements kernels.NormInputRounder
// (rmsnorm_forward_bf16 with a null out, Ops.RMSNormForwardBF16): the
// bits of RMSNormForwardRounded's outBF and rstd, in either precision.
func (b *Backend) RMSNormForwardBF16(outBF []uint16, rstd []float32, inp, weight []float32, N, C int, eps float32) {
	b.rmsNormForwardBF16("RMSNormForwardBF16", nil, rstd, outBF, inp, weight, N, C, eps)
}

// LoRABackwardManyInputBF16 implements kernels.NormInputRounder
// (Ops.LoRABackwardManyInputBF16; it panics in PrecisionF32), after
// kernels.NeedLoRAManyInputBF16's checks.
func (b *Backend) LoRABackwardManyInputBF16(dx []float32, douts [][]float32, doutBFs [][]uint16, us [][]float32, xBF []uint16, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool) {
	const op = "LoRABackwardManyInputBF16"
	kernels.NeedLoRAManyInputBF16(op, dx, douts, doutBFs, us, xBF, as, bs, das, dbs, N, In, R, Outs)
	b.onDeviceCost(op, func() opCost { return loraManyCost(N, In, R, Outs, dx != nil) }, func() error {
		var bd, bdBF []*Buffer
		if douts != nil {
			bd = b.f32s(op, "dout", douts)
		} else {
			bdBF = make([]*Buffer, len(doutBFs))
			for i, d := range doutBFs {
				bdBF[i] = b.bf16(op, "dout", d)
			}
		}
		return b.ops.LoRABackwardManyInputBF16(b.f32(op, "dx", dx), bd, bdBF, b.f32s(op, "u", us), b.bf16(op, "xBF", xBF), b.f32s(op, "A", as), b.f32s(op, "B", bs),
			b.f32s(op, "dA", das), b.f32s(op, "dB", dbs), N, In, R, Outs, scale, set)
	})
}

func (b *Backend) LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	const op = "LinearBackward"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dout", len(dout), N*OC)
	if dinp != nil {
		kernels.Need(op, "dinp", len(dinp), N*C)
		kernels.Need(op, "weight", len(weight), OC*C)
	}
	if dweight != nil {
		kernels.Need(op, "dweight", len(dweight), OC*C)
		kernels.Need(op, "inp", len(inp), N*C)
	}
	if dbias != nil {
		kernels.Need(op, "dbias", len(dbias), OC)
	}
	if N*OC == 0 || dinp == nil && dweight == nil && dbias == nil {
		return
	}
	b.onDeviceCost(op, func() opCost { return linearCost(linearBackwardProducts(dinp, dweight), N, C, OC) }, func() error {
		return b.ops.LinearBackward(b.f32(op, "dinp", dinp), b.f32(op, "dweight", dweight), b.f32(op, "dbias", dbias),
			b.f32(op, "dout", dout), b.f32(op, "inp", inp), b.f32(op, "weight", weight), N, C, OC)
	})
}

func (b *Backend) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	const op = "LinearBackwardBF16"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dinp", len(dinp), N*C)
	kernels.Need(op, "dout", len(dout), N*OC)
	kernels.Need(op, "weight", len(weight), OC*C)
	if N*C*OC == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return linearCost(1, N, C, OC) }, func() error {
		return b.ops.LinearBackwardBF16(b.f32(op, "dinp", dinp), b.f32(op, "dout", dout), b.bf16(op, "weight", weight), N, C, OC)
	})
}

// ---- attention: Ops ----------------------------------------------------------

func (b *Backend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	const op = "AttentionForward"
	kernels.NeedAttentionForward(op, out, lse, q, k, v, seqOff, N, H, KVH, D)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return attnCost(seqOff, H, D, N, false) }, func() error {
		bq, bk, bv := b.f32(op, "q", q), b.f32(op, "k", k), b.f32(op, "v", v)
		b.label = b.ops.attnPath(D, b.ops.gemmFits(seqOff, H, KVH), bq, bk, bv)
		return b.ops.attnForward(op, b.f32(op, "out", out), b.f32(op, "lse", lse), bq, bk, bv,
			b.edge(op, seqOff), seqOff, len(seqOff)-1, N, H, KVH, D, N, scale)
	})
}

func (b *Backend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	const op = "AttentionBackward"
	kernels.NeedAttentionBackward(op, dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return attnCost(seqOff, H, D, N, true) }, func() error {
		bdout, bq, bk, bv := b.f32(op, "dout", dout), b.f32(op, "q", q), b.f32(op, "k", k), b.f32(op, "v", v)
		b.label = b.ops.attnPath(D, b.ops.gemmFits(seqOff, H, KVH), bdout, bq, bk, bv)
		return b.ops.attnBackward(op, b.f32(op, "dq", dq), b.f32(op, "dk", dk), b.f32(op, "dv", dv), bdout,
			b.f32(op, "out", out), b.f32(op, "lse", lse), bq, bk, bv,
			b.edge(op, seqOff), seqOff, len(seqOff)-1, N, H, KVH, D, N, scale)
	})
}

func (b *Backend) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	const op = "AttentionWindowForward"
	kernels.NeedWindow(op, W)
	kernels.NeedAttentionForward(op, out, lse, q, k, v, seqOff, N, H, KVH, D)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return attnCost(seqOff, H, D, W, false) }, func() error {
		bq, bk, bv := b.f32(op, "q", q), b.f32(op, "k", k), b.f32(op, "v", v)
		b.label = b.ops.attnPath(D, b.ops.gemmFits(seqOff, H, KVH), bq, bk, bv)
		return b.ops.attnForward(op, b.f32(op, "out", out), b.f32(op, "lse", lse), bq, bk, bv,
			b.edge(op, seqOff), seqOff, len(seqOff)-1, N, H, KVH, D, W, scale)
	})
}

func (b *Backend) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	const op = "AttentionWindowBackward"
	kernels.NeedWindow(op, W)
	kernels.NeedAttentionBackward(op, dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return attnCost(seqOff, H, D, W, true) }, func() error {
		bdout, bq, bk, bv := b.f32(op, "dout", dout), b.f32(op, "q", q), b.f32(op, "k", k), b.f32(op, "v", v)
		b.label = b.ops.attnPath(D, b.ops.gemmFits(seqOff, H, KVH), bdout, bq, bk, bv)
		return b.ops.attnBackward(op, b.f32(op, "dq", dq), b.f32(op, "dk", dk), b.f32(op, "dv", dv), bdout,
			b.f32(op, "out", out), b.f32(op, "lse", lse), bq, bk, bv,
			b.edge(op, seqOff), seqOff, len(seqOff)-1, N, H, KVH, D, W, scale)
	})
}

func (b *Backend) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	const op = "AttentionDecode"
	kernels.NeedAttentionDecode(op, out, q, kCache, vCache, Tq, Tk, H, KVH, D)
	if Tq*D == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.AttentionDecode(b.f32(op, "out", out), b.f32(op, "q", q), b.f32(op, "kCache", kCache), b.f32(op, "vCache", vCache),
			Tq, Tk, H, KVH, D, scale)
	})
}

// ---- embedding: Ops ---------------------------------------------------------

func (b *Backend) EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int) {
	const op = "EmbeddingForward"
	kernels.NeedEmbedding(op, out, ids, len(table), N, C, V)
	if N*C == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.EmbeddingForward(b.f32(op, "out", out), b.edge(op, ids[:N]), b.f32(op, "table", table), N, C, V)
	})
}

func (b *Backend) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	const op = "EmbeddingForwardBF16"
	kernels.NeedEmbedding(op, out, ids, len(table), N, C, V)
	if N*C == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.EmbeddingForwardBF16(b.f32(op, "out", out), b.edge(op, ids[:N]), b.bf16(op, "table", table), N, C, V)
	})
}

func (b *Backend) EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int) {
	const op = "EmbeddingBackward"
	kernels.NeedSizes(op, N, C, V)
	kernels.Need(op, "dtable", len(dtable), V*C)
	kernels.Need(op, "dout", len(dout), N*C)
	kernels.Need(op, "ids", len(ids), N)
	kernels.NeedIDs(op, ids[:N], 0, V)
	if N*C == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.EmbeddingBackward(b.f32(op, "dtable", dtable), b.f32(op, "dout", dout), b.edge(op, ids[:N]), N, C, V)
	})
}

// ---- softmax family: Ops ----------------------------------------------------

func (b *Backend) LogSoftmaxForward(out, inp []float32, N, V int) {
	const op = "LogSoftmaxForward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "out", len(out), N*V)
	kernels.Need(op, "inp", len(inp), N*V)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.LogSoftmaxForward(b.f32(op, "out", out), b.f32(op, "inp", inp), N, V)
	})
}

func (b *Backend) LogSoftmaxBackward(dinp, dout, out []float32, N, V int) {
	const op = "LogSoftmaxBackward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "dinp", len(dinp), N*V)
	kernels.Need(op, "dout", len(dout), N*V)
	kernels.Need(op, "out", len(out), N*V)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.LogSoftmaxBackward(b.f32(op, "dinp", dinp), b.f32(op, "dout", dout), b.f32(op, "out", out), N, V)
	})
}

func (b *Backend) EntropyForward(ent, inp []float32, N, V int) {
	const op = "EntropyForward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "ent", len(ent), N)
	kernels.Need(op, "inp", len(inp), N*V)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.EntropyForward(b.f32(op, "ent", ent), b.f32(op, "inp", inp), N, V)
	})
}

func (b *Backend) EntropyBackward(dinp, dent, inp []float32, N, V int) {
	const op = "EntropyBackward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "dinp", len(dinp), N*V)
	kernels.Need(op, "dent", len(dent), N)
	kernels.Need(op, "inp", len(inp), N*V)
	if N == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.EntropyBackward(b.f32(op, "dinp", dinp), b.f32(op, "dent", dent), b.f32(op, "inp", inp), N, V)
	})
}

// ---- fused lm_head + log-softmax: Ops -------------------------------------------

func (b *Backend) LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	const op = "LogprobForward"
	kernels.NeedLogprobForward(op, logprob, entropy, lse, expect, hidden, len(weight), targets, N, C, V)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return logprobCost(logprobForwardProducts(expect), N, C, V) }, func() error {
		return b.ops.LogprobForward(b.f32(op, "logprob", logprob), b.f32(op, "entropy", entropy), b.f32(op, "lse", lse),
			b.f32(op, "expect", expect), b.f32(op, "hidden", hidden), b.f32(op, "weight", weight), b.edge(op, targets[:N]), N, C, V, chunk)
	})
}

func (b *Backend) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	const op = "LogprobForwardBF16"
	kernels.NeedLogprobForward(op, logprob, entropy, lse, expect, hidden, len(weight), targets, N, C, V)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return logprobCost(logprobForwardProducts(expect), N, C, V) }, func() error {
		return b.ops.LogprobForwardBF16(b.f32(op, "logprob", logprob), b.f32(op, "entropy", entropy), b.f32(op, "lse", lse),
			b.f32(op, "expect", expect), b.f32(op, "hidden", hidden), b.bf16(op, "weight", weight), b.edge(op, targets[:N]), N, C, V, chunk)
	})
}

func (b *Backend) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	const op = "LogprobBackward"
	kernels.NeedLogprobBackward(op, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, len(weight), targets, N, C, V)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return logprobCost(logprobBackwardProducts(dweight), N, C, V) }, func() error {
		return b.ops.LogprobBackward(b.f32(op, "dhidden", dhidden), b.f32(op, "dweight", dweight), b.f32(op, "dlogprob", dlogprob),
			b.f32(op, "dentropy", dentropy), b.f32(op, "lse", lse), b.f32(op, "entropy", entropy), b.f32(op, "hidden", hidden),
			b.f32(op, "weight", weight), b.edge(op, targets[:N]), N, C, V, chunk)
	})
}

func (b *Backend) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	const op = "LogprobBackwardBF16"
	kernels.NeedLogprobBackward(op, dhidden, nil, dlogprob, dentropy, lse, entropy, hidden, len(weight), targets, N, C, V)
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return logprobCost(2, N, C, V) }, func() error {
		return b.ops.LogprobBackwardBF16(b.f32(op, "dhidden", dhidden), b.f32(op, "dlogprob", dlogprob), b.f32(op, "dentropy", dentropy),
			b.f32(op, "lse", lse), b.f32(op, "entropy", entropy), b.f32(op, "hidden", hidden), b.bf16(op, "weight", weight),
			b.edge(op, targets[:N]), N, C, V, chunk)
	})
}

func (b *Backend) LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int) {
	const op = "LogprobBackwardExpect"
	kernels.NeedLogprobBackwardExpect(op, dhidden, dlogprob, expect, len(weight), targets, N, C, V)
	if N*C == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.LogprobBackwardExpect(b.f32(op, "dhidden", dhidden), b.f32(op, "dlogprob", dlogprob), b.f32(op, "expect", expect),
			b.f32(op, "weight", weight), b.edge(op, targets[:N]), N, C, V)
	})
}

func (b *Backend) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	const op = "LogprobBackwardExpectBF16"
	kernels.NeedLogprobBackwardExpect(op, dhidden, dlogprob, expect, len(weight), targets, N, C, V)
	if N*C == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.LogprobBackwardExpectBF16(b.f32(op, "dhidden", dhidden), b.f32(op, "dlogprob", dlogprob), b.f32(op, "expect", expect),
			b.bf16(op, "weight", weight), b.edge(op, targets[:N]), N, C, V)
	})
}

// ---- sampling rows: the host, on the caller's goroutine ---------------------

// RowMax runs on the host, on the caller's goroutine (the sampler's).
// In the stream-ordered mode it waits for the queued ops first: x may be
// managed memory they write.
func (b *Backend) RowMax(x []float32) float32 {
	b.syncHost("RowMax")
	return b.host.RowMax(x)
}

// ExpShift runs on the host, on the caller's goroutine (the sampler's).
// It waits for the queued ops first, as RowMax.
func (b *Backend) ExpShift(dst, x []float32, mu, scale float32) float64 {
	b.syncHost("ExpShift")
	return b.host.ExpShift(dst, x, mu, scale)
}

// ---- optimizer and elementwise: Ops -----------------------------------------

func (b *Backend) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	const op = "AdamW"
	kernels.NeedAdamW(op, param, grad, m, v, n, step)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.AdamW(b.f32(op, "param", param), b.f32(op, "grad", grad), b.f32(op, "m", m), b.f32(op, "v", v), n, step, h)
	})
}

func (b *Backend) Add(out, x, y []float32, n int) {
	const op = "Add"
	kernels.NeedSizes(op, n)
	kernels.Need(op, "out", len(out), n)
	kernels.Need(op, "a", len(x), n)
	kernels.Need(op, "b", len(y), n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error {
		return b.ops.Add(b.f32(op, "out", out), b.f32(op, "a", x), b.f32(op, "b", y), n)
	})
}

func (b *Backend) Scale(out, a []float32, s float32, n int) {
	b.scalarOp("Scale", b.ops.Scale, out, a, s, n)
}

func (b *Backend) AXPY(out, a []float32, s float32, n int) {
	b.scalarOp("AXPY", b.ops.AXPY, out, a, s, n)
}

func (b *Backend) AddScalar(out, a []float32, s float32, n int) {
	b.scalarOp("AddScalar", b.ops.AddScalar, out, a, s, n)
}

// scalarOp runs an elementwise op of one buffer and a scalar (Scale, AXPY,
// AddScalar) through launch, the Ops method, after ref's checks.
func (b *Backend) scalarOp(op string, launch func(out, a *Buffer, s float32, n int) error, out, a []float32, s float32, n int) {
	kernels.NeedSizes(op, n)
	kernels.Need(op, "out", len(out), n)
	kernels.Need(op, "a", len(a), n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error { return launch(b.f32(op, "out", out), b.f32(op, "a", a), s, n) })
}

// SumSquares runs on the device (Ops.SumSquares: sumsquares.cu's fixed
// tree in double), and the host reads the one double it gives.
func (b *Backend) SumSquares(x []float32, n int) float64 {
	const op = "SumSquares"
	kernels.NeedSizes(op, n)
	kernels.Need(op, "x", len(x), n)
	if n == 0 {
		return 0
	}
	var s float64
	b.onDevice(op, func() error {
		var err error
		s, err = b.ops.SumSquares(b.f32(op, "x", x), n)
		return err
	})
	return s
}

var _ kernels.SumSquaresManyer = (*Backend)(nil)

// SumSquaresMany implements kernels.SumSquaresManyer: every tensor's
// reduction queued (Ops.SumSquaresMany: SumSquares' kernels and geometry,
// so its bits), then one copy of all the results to the host, the one wait
// where a SumSquares a tensor waits once each.
func (b *Backend) SumSquaresMany(dst []float64, xs [][]float32) {
	const op = "SumSquaresMany"
	kernels.NeedSumSquaresMany(dst, xs)
	bufs, ns := make([]*Buffer, len(xs)), make([]int, len(xs))
	some := false
	for i, x := range xs {
		ns[i] = len(x)
		some = some || len(x) > 0
	}
	if !some {
		clear(dst)
		return
	}
	b.onDevice(op, func() error {
		for i, x := range xs {
			bufs[i] = b.f32(op, "xs["+strconv.Itoa(i)+"]", x)
		}
		s, err := b.ops.SumSquaresMany(bufs, ns)
		if err != nil {
			return err
		}
		copy(dst, s)
		return nil
	})
}

var _ kernels.SumSquaresSegmenter = (*Backend)(nil)

// SumSquaresSegments implements kernels.SumSquaresSegmenter: one launch
// for every segment of x (Ops.SumSquaresSegments: SumSquares' order for
// each, so its bits), then one copy of the results to the host, which
// waits for it.
func (b *Backend) SumSquaresSegments(dst []float64, x []float32, offs, ns []int) {
	const op = "SumSquaresSegments"
	kernels.NeedSumSquaresSegments(dst, x, offs, ns)
	if len(x) == 0 || len(offs) == 0 { // every segment empty
		clear(dst)
		return
	}
	b.onDevice(op, func() error {
		s, err := b.ops.SumSquaresSegments(b.f32(op, "x", x), offs, ns)
		if err != nil {
			return err
		}
		copy(dst, s)
		return nil
	})
}

// ---- copies: Ops ---------------------------------------------------------------

func (b *Backend) Copy(dst, src []float32, n int) {
	const op = "Copy"
	kernels.NeedSizes(op, n)
	kernels.Need(op, "dst", len(dst), n)
	kernels.Need(op, "src", len(src), n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error { return b.ops.Copy(b.f32(op, "dst", dst), b.f32(op, "src", src), n) })
}

func (b *Backend) Zero(x []float32, n int) {
	const op = "Zero"
	kernels.NeedSizes(op, n)
	kernels.Need(op, "x", len(x), n)
	if n == 0 {
		return
	}
	b.onDevice(op, func() error { return b.ops.Zero(b.f32(op, "x", x), n) })
}
