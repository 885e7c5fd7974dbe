package cuda

// PlanGatedLoRAForward is GatedLoRAForward's launch, for the shim test.
var PlanGatedLoRAForward = planGatedLoRAForward

// PlanGatedLoRABackward is GatedLoRABackward's launch, for the shim test.
var PlanGatedLoRABackward = planGatedLoRABackward

// PlanGatedLoRAForwardBF16 is GatedLoRAForwardBF16's launch, for the shim
// test.
var PlanGatedLoRAForwardBF16 = planGatedLoRAForwardBF16

// PlanGatedLoRABackwardBF16 is GatedLoRABackwardBF16's launch, for the
// shim test.
var PlanGatedLoRABackwardBF16 = planGatedLoRABackwardBF16
