package kernels

import "fmt"

// LoRAManyBackwarder is implemented by a backend that runs the LoRA
// backward of several projections of one input x (q, k and v; gate and
// up) for less memory traffic than one projection at a time: there each
// adapter gradient DA += gᵀ·x reads x again, and each rank-r product
// dx += g·A reads and writes the [N, In] dx again. kernels/cuda
// implements it (one DA product for all of them, then one dx product over
// the concatenated rank; ops_lora.go); host backends do not, and the model
// runs each projection's backward there as before.
type LoRAManyBackwarder interface {
	// LoRABackwardMany, for every i, with gᵢ = scale·douts[i]·bs[i]
	// [N, R], accumulates
	//
	//	dbs[i] [Outs[i], R] += douts[i]ᵀ·us[i]
	//	das[i] [R, In]      += gᵢᵀ·x
	//
	// and sets dx [N, In] to Σᵢ gᵢ·as[i] (set: its contents ignored) or
	// adds that sum to it; dx nil: no dx. douts[i] is [N, Outs[i]], us[i]
	// [N, R], x [N, In], as[i] [R, In], bs[i] [Outs[i], R]. The outputs
	// must not overlap each other or the inputs. The float32 sums may run
	// in another order than one Matmul a product would (the backend says
	// which); N, In, R and every Outs[i] are at least 1.
	LoRABackwardMany(dx []float32, douts, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool)
}

// LoRARoundedBackwarder is implemented by a backend whose LoRA backward of
// several projections can take their output gradients as bfloat16
// roundings only: kernels/cuda in PrecisionBF16, where the gated unit's
// backward already writes dgate's and dup's roundings for the base
// products (DoutRounder). The model's MLP backward then hands the gate and
// up projections' LoRA backward those copies too, and the gated backward
// writes no float32 dgate and dup at all: on the 7B shape 1.24 GB a layer
// less written, and the DB and dout·B products read 2 bytes a value where
// they read 4 (another 1.24 GB a layer). Host backends do not implement
// it.
type LoRARoundedBackwarder interface {
	// RoundsLoRADout reports whether LoRABackwardManyRounded may be used
	// (false: it must not be).
	RoundsLoRADout() bool
	// LoRABackwardManyRounded is LoRAManyBackwarder's LoRABackwardMany
	// with each dout given only as its bfloat16 rounding doutBFs[i]
	// (ToBF16's bits, [N, Outs[i]]): the products with dout, DB +=
	// doutᵀ·u and g = dout·B, multiply bfloat16 operands (us[i] and bs[i]
	// rounded as ToBF16 rounds) with float32 sums; the DA and dx products
	// are LoRABackwardMany's. Its results differ from LoRABackwardMany's
	// on the float32 dout by those roundings (the bfloat16 precision's
	// tolerance class).
	LoRABackwardManyRounded(dx []float32, doutBFs [][]uint16, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool)
}

// NormInputRounder is implemented by a backend whose LoRA backward of
// several projections can take their input x as its bfloat16 rounding
// only: kernels/cuda in PrecisionBF16, whose DA products then multiply
// bfloat16 operands. The model's training backward recomputes each
// block's normed input h [N, C] before the MLP's and the attention's
// backward; where the LoRA DA products of q, k, v and of gate, up are its
// only readers (the base products' input gradients do not read it), the
// recompute writes h as bfloat16 only (RMSNormForwardBF16) and those
// products take it: on the 7B shape h moves 2 bytes a value where it
// moved 4, written and read twice a layer, 0.23 GB a layer less
// (train/model's TestStepTraffic7B). It moves bits: the DA products
// multiply h's and g's roundings where TF32 rounded them, as
// LoRAInputRounder's DA of the down projection does on act. Host
// backends (ref, cpu) do not implement it.
type NormInputRounder interface {
	// RoundsNormInput reports whether the methods below may be used
	// (false: they must not be).
	RoundsNormInput() bool
	// RMSNormForwardBF16 is RMSNormForward writing out [N, C] only as its
	// bfloat16 rounding outBF (ToBF16's bits of RMSNormForward's out) and
	// rstd [N] as RMSNormForward does.
	RMSNormForwardBF16(outBF []uint16, rstd []float32, inp, weight []float32, N, C int, eps float32)
	// LoRABackwardManyInputBF16 is LoRAManyBackwarder's LoRABackwardMany
	// (douts given) or LoRARoundedBackwarder's LoRABackwardManyRounded
	// (doutBFs given; exactly one of the two is not nil) with x [N, In]
	// given as its bfloat16 rounding xBF: each DA product das[i] +=
	// gᵢᵀ·x multiplies bfloat16 operands, g rounded as ToBF16 rounds, with
	// float32 sums; the DB and dx products are those ops'. Its results
	// differ from theirs on the float32 x by those roundings (the
	// bfloat16 precision's tolerance class).
	LoRABackwardManyInputBF16(dx []float32, douts [][]float32, doutBFs [][]uint16, us [][]float32, xBF []uint16, as, bs, das, dbs [][]float32, N, In, R int, Outs []int, scale float32, set bool)
}

// NeedLoRAMany panics unless LoRABackwardMany's lists agree in length (at
// least one projection), its sizes are positive and every buffer holds
// its shape.
func NeedLoRAMany(op string, dx []float32, douts, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int) {
	needLoRAMany(op, dx, lens(douts), us, len(x), as, bs, das, dbs, N, In, R, Outs)
}

// NeedLoRAManyRounded is NeedLoRAMany for LoRABackwardManyRounded, whose
// output gradients are bfloat16.
func NeedLoRAManyRounded(op string, dx []float32, doutBFs [][]uint16, us [][]float32, x []float32, as, bs, das, dbs [][]float32, N, In, R int, Outs []int) {
	needLoRAMany(op, dx, lens(doutBFs), us, len(x), as, bs, das, dbs, N, In, R, Outs)
}

// NeedLoRAManyInputBF16 is NeedLoRAMany for NormInputRounder's
// LoRABackwardManyInputBF16: exactly one of douts and doutBFs is not nil,
// and x is bfloat16.
func NeedLoRAManyInputBF16(op string, dx []float32, douts [][]float32, doutBFs [][]uint16, us [][]float32, xBF []uint16, as, bs, das, dbs [][]float32, N, In, R int, Outs []int) {
	if (douts == nil) == (doutBFs == nil) {
		panic(fmt.Sprintf("kernels.%s: want exactly one of douts and doutBFs (given: %v, %v)", op, douts != nil, doutBFs != nil))
	}
	dl := lens(douts)
	if doutBFs != nil {
		dl = lens(doutBFs)
	}
	needLoRAMany(op, dx, dl, us, len(xBF), as, bs, das, dbs, N, In, R, Outs)
}

// lens returns the lengths of xs.
func lens[T any](xs [][]T) []int {
	n := make([]int, len(xs))
	for i, x := range xs {
		n[i] = len(x)
	}
	return n
}

// needLoRAMany is NeedLoRAMany given the douts' lengths.
func needLoRAMany(op string, dx []float32, douts []int, us [][]float32, x int, as, bs, das, dbs [][]float32, N, In, R int, Outs []int) {
	k := len(Outs)
	if k == 0 || len(douts) != k || len(us) != k || len(as) != k || len(bs) != k || len(das) != k || len(dbs) != k {
		panic(fmt.Sprintf("kernels.%s: %d output sizes, %d douts, %d us, %d As, %d Bs, %d dAs, %d dBs", op, k, len(douts), len(us), len(as), len(bs), len(das), len(dbs)))
	}
	if N < 1 || In < 1 || R < 1 {
		panic(fmt.Sprintf("kernels.%s: N %d, In %d, R %d: each must be at least 1", op, N, In, R))
	}
	if dx != nil {
		Need(op, "dx", len(dx), N*In)
	}
	Need(op, "x", x, N*In)
	for i, out := range Outs {
		if out < 1 {
			panic(fmt.Sprintf("kernels.%s: output size %d of projection %d", op, out, i))
		}
		Need(op, "dout", douts[i], N*out)
		Need(op, "u", len(us[i]), N*R)
		Need(op, "A", len(as[i]), R*In)
		Need(op, "B", len(bs[i]), out*R)
		Need(op, "dA", len(das[i]), R*In)
		Need(op, "dB", len(dbs[i]), out*R)
	}
}
