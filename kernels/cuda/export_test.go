package cuda

// The launch plans of Ops, for the tests that run the same launches on the
// CPU shim.
type Step = step

var (
	PlanRMSNormForward  = planRMSNormForward
	PlanRMSNormBackward = planRMSNormBackward
	PlanRoPE            = planRoPE
	PlanFlat            = planFlat
	PlanRows            = planRows
	PlanEmbeddingBwd    = planEmbeddingBackward
	PlanAdamW           = planAdamW
	PlanLogprob         = planLogprob
	LogprobChunk        = logprobChunk
	KernelModules       = kernelModules

	PlanAttention         = planAttention
	PlanAttentionBackward = planAttentionBackward

	PlanAttentionTC         = planAttentionTC
	PlanAttentionBackwardTC = planAttentionBackwardTC
	AttnTC                  = attnTC

	PlanAttentionTC2         = planAttentionTC2
	PlanAttentionBackwardTC2 = planAttentionBackwardTC2

	PlanAttentionTC3            = planAttentionTC3
	PlanAttentionTC3K64         = planAttentionTC3K64
	PlanAttentionBackwardTC3    = planAttentionBackwardTC3
	PlanAttentionBackwardTC3K64 = planAttentionBackwardTC3K64

	PlanAttentionDecodeBatch = planAttentionDecodeBatch
	DecodeTable              = decodeTable
)

// SetChooseThreads makes ChooseRows launch blocks of n threads (a multiple
// of 32 up to 1024) instead of chooseThreads; 0 restores it.
func (b *Backend) SetChooseThreads(n int) { b.ops.chooseThreads = n }

// GemmRows runs one row-major product on d (gemmRows), for the tests of
// the cuBLASLt path with a bfloat16 C, which no Device method exposes.
func (d *Device) GemmRows(g Mm) error { return d.gemmRows(g) }
