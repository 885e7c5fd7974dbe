package cuda

// PlanGatedLoRAForward is GatedLoRAForward's launch, for the shim test.
var PlanGatedLoRAForward = planGatedLoRAForward
