package kernels

import "fmt"

// LoRAManyForwarder is implemented by a backend that runs the LoRA
// forward of several projections of one input x (q, k and v of the normed
// h; gate and up of the MLP's normed input) for less memory traffic than
// one projection at a time: there each u = x·Aᵀ reads the whole [N, In]
// x again, for an output of only N·R values. kernels/cuda implements it
// (the A's side by side, one product over the concatenated rank that
// reads x once; ops_loraforward.go); host backends do not, and the model
// runs each projection's LoRA forward there as before.
//
// It is the LoRA half of kernels.LinearAdderBF16's order: the rank-r
// products set the outputs, and the base products add onto them after.
type LoRAManyForwarder interface {
	// LoRAForwardMany sets, for every i,
	//
	//	us[i]   [N, R]       = scale·(x·as[i]ᵀ)
	//	outs[i] [N, Outs[i]] = us[i]·bs[i]ᵀ
	//
	// (outs' and us' contents ignored), with x [N, In], as[i] [R, In] and
	// bs[i] [Outs[i], R]: one projection's LinearForward, Scale and
	// Matmul at beta 0 each, the rounding of each step kept (the backend
	// says where its sums may run in another order). The outputs must
	// not overlap each other or the inputs; N, In, R and every Outs[i]
	// are at least 1.
	LoRAForwardMany(outs, us [][]float32, x []float32, as, bs [][]float32, N, In, R int, Outs []int, scale float32)
}

// NeedLoRAForwardMany panics unless LoRAForwardMany's (GateUpRounder's
// LoRAForwardManyTo's, outputs bfloat16) lists agree in
// length (at least one projection), its sizes are positive and every
// buffer holds its shape.
func NeedLoRAForwardMany[Out float32 | uint16](op string, outs [][]Out, us [][]float32, x []float32, as, bs [][]float32, N, In, R int, Outs []int) {
	k := len(Outs)
	if k == 0 || len(outs) != k || len(us) != k || len(as) != k || len(bs) != k {
		panic(fmt.Sprintf("kernels.%s: %d output sizes, %d outputs, %d us, %d As, %d Bs", op, k, len(outs), len(us), len(as), len(bs)))
	}
	if N < 1 || In < 1 || R < 1 {
		panic(fmt.Sprintf("kernels.%s: N %d, In %d, R %d: each must be at least 1", op, N, In, R))
	}
	Need(op, "x", len(x), N*In)
	for i, out := range Outs {
		if out < 1 {
			panic(fmt.Sprintf("kernels.%s: output size %d of projection %d", op, out, i))
		}
		Need(op, "out", len(outs[i]), N*out)
		Need(op, "u", len(us[i]), N*R)
		Need(op, "A", len(as[i]), R*In)
		Need(op, "B", len(bs[i]), out*R)
	}
}
