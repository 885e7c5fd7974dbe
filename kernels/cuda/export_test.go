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

	PlanAttentionDecodeBatch = planAttentionDecodeBatch
	DecodeTable              = decodeTable
)
