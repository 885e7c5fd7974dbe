package cuda

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// The plans of ops_linear.go and ops_logprob.go, for the tests that run
// them on the CPU shim.
type (
	Mm        = mm
	XStep     = xstep
	LMScratch = lmScratch

	AttnGEMMScratch = attnGEMMScratch
	GEMMRun         = gemmRun
)

var (
	PlanLinearForward        = planLinearForward
	PlanLinearBackward       = planLinearBackward
	PlanLinearForwardBF16    = planLinearForwardBF16
	PlanLinearBackwardBF16   = planLinearBackwardBF16
	PlanLinearBackwardBF16To = planLinearBackwardBF16To
	PlanLogprobW             = planLogprobW
	PlanLogprobBackward      = planLogprobBackward
	PlanLoRABackwardMany     = planLoRABackwardMany
	PlanLoRABackwardManyBF16 = planLoRABackwardManyBF16
	PlanLoRAManyInputBF16    = planLoRABackwardManyInputBF16
	PlanMatmulBF16           = planMatmulBF16
	MmLDs                    = mm.lds
	MmColMajor               = mm.colMajor
	BF16ChunkRows            = bf16ChunkRows

	PlanAttentionGEMM         = planAttentionGEMM
	PlanAttentionBackwardGEMM = planAttentionBackwardGEMM
	AttnGEMMSizes             = attnGEMMSizes
	GEMMRuns                  = gemmRuns
	GEMMBlockScores           = gemmBlockScores
	AttnGEMMBlock             = attnGEMMBlock
)

// StepParts returns the kernel launch or the GEMM of s (one is nil).
func StepParts(s XStep) (*Step, *Mm) { return s.k, s.g }

// LMWeight returns the lm_head weight kind of the logprob plans: float32,
// or bfloat16 multiplied in precision p.
func LMWeight(bf16 bool, p kernels.Precision) lmWeight { return lmWeight{bf16: bf16, prec: p} }

// NewLMScratch is lmScratch{wf, hb, pb}.
func NewLMScratch(wf, hb, pb any) LMScratch { return lmScratch{wf, hb, pb} }

// GemmRows runs one mm on the device's buffers (Ops' GEMM steps).
func GemmRows(d *Device, g Mm) error { return d.gemmRows(g) }

// Ptr is the buffer's device address.
func (b *Buffer) Ptr() DevPtr { return b.ptr }

// Ops returns the backend's Ops.
func (b *Backend) Ops() *Ops { return b.ops }

// SetGEMMScoreBytes bounds the GEMM attention's score scratch of o at n
// bytes (0: attnGEMMScoreBytes), so that small shapes take several runs.
func (o *Ops) SetGEMMScoreBytes(n int) { o.scoreCap = n }

// SetGEMMRowBlock sets the GEMM attention's row block of o to n positions
// (0: attnGEMMBlock), so that small shapes take several blocks.
func (o *Ops) SetGEMMRowBlock(n int) { o.rowBlock = n }

// RunParts returns a GEMM attention run's first entry, entry count,
// padded length and row block.
func RunParts(r gemmRun) (e0, n, L, B int) { return r.e0, r.n, r.L, r.B }

// GEMMBlocks returns gemmBlocks(L, B, W) as {i0, n, k0, nk} each.
func GEMMBlocks(L, B, W int) [][4]int {
	var out [][4]int
	for _, b := range gemmBlocks(L, B, W) {
		out = append(out, [4]int{b.i0, b.n, b.k0, b.nk})
	}
	return out
}

// SetLtMaxPlans bounds the cuBLASLt plans d keeps (ltMaxPlans otherwise).
func (d *Device) SetLtMaxPlans(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lt.maxPlans = n
}

// LtRanks returns, for each cuBLASLt plan, the column-major shape
// ("op(A) op(B) m×n×k") and the heuristic's rank of its algorithm, when
// the plan was made with the autotune on.
func (d *Device) LtRanks() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, p := range d.lt.plans {
		if k.tune > 1 {
			out[fmt.Sprintf("%v%v %d×%d×%d", k.ta, k.tb, k.m, k.n, k.k)] = p.rank
		}
	}
	return out
}
