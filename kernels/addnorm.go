package kernels

// ResidualNormer is implemented by a backend that adds the residual stream
// and RMS-normalises the sum in one pass (kernels/cuda): a pre-norm block
// adds the attention's output into the residual stream and normalises the
// sum for the MLP, the next block adds the MLP's output and normalises
// for its attention, and an Add followed by RMSNormForward reads the sum
// again right after writing it (on the 7B shape 117 MB and one launch
// each). Host backends (ref, cpu) do not implement it; the model then
// runs the two ops.
type ResidualNormer interface {
	// AddRMSNormForward writes sum = a + res (N·C values; sum may be a or
	// res, not out), then RMSNormForward of sum into out and rstd, and,
	// when outBF is not nil, out rounded to bfloat16 as
	// InputRounder.RMSNormForwardRounded writes it: the bits of Add
	// followed by RMSNormForward (RMSNormForwardRounded).
	AddRMSNormForward(sum, out, rstd []float32, outBF []uint16, a, res, weight []float32, N, C int, eps float32)
}

// NeedAddRMSNorm panics unless AddRMSNormForward's sizes are not negative
// and every buffer holds its shape (outBF only when given).
func NeedAddRMSNorm(op string, sum, out, rstd []float32, outBF []uint16, a, res, weight []float32, N, C int) {
	NeedSizes(op, N, C)
	Need(op, "sum", len(sum), N*C)
	Need(op, "out", len(out), N*C)
	Need(op, "rstd", len(rstd), N)
	if outBF != nil {
		Need(op, "outBF", len(outBF), N*C)
	}
	Need(op, "a", len(a), N*C)
	Need(op, "res", len(res), N*C)
	Need(op, "weight", len(weight), C)
}
