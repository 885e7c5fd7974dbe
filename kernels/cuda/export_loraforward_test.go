package cuda

// The LoRA forward's plan, for the tests that run it on the CPU shim.
var PlanLoRAForwardMany = planLoRAForwardMany
