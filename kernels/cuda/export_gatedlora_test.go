package cuda

// PlanGatedLoRAForward is GatedLoRAForward's launch, for the shim test.
var PlanGatedLoRAForward = planGatedLoRAForward

// PlanGatedLoRABackward is GatedLoRABackward's launch, for the shim test.
var PlanGatedLoRABackward = planGatedLoRABackward
