package cuda

// PlanGatedLoRAForward is GatedLoRAForward's launch, for the shim test.
func PlanGatedLoRAForward(actBF, u, gate, up, a any, N, I, R int, scale float32, gelu bool) []step {
	return planGatedLoRAForwardOf(false, actBF, u, gate, up, a, N, I, R, scale, gelu)
}

// PlanGatedLoRABackward is GatedLoRABackward's launch, for the shim test.
func PlanGatedLoRABackward(dgateBF, dupBF, da, g, dact, dactBF, gate, up any, N, I, R int, gelu bool) []step {
	return planGatedLoRABackwardOf(false, dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R, gelu)
}

// PlanGatedLoRAForwardBF16 is Backend.GatedLoRAForwardBF16's launch (gate
// and up bfloat16), for the shim test.
func PlanGatedLoRAForwardBF16(actBF, u, gateBF, upBF, a any, N, I, R int, scale float32, gelu bool) []step {
	return planGatedLoRAForwardOf(true, actBF, u, gateBF, upBF, a, N, I, R, scale, gelu)
}

// PlanGatedLoRABackwardBF16 is Backend.GatedLoRABackwardBF16's launch
// (gate and up bfloat16), for the shim test.
func PlanGatedLoRABackwardBF16(dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF any, N, I, R int, gelu bool) []step {
	return planGatedLoRABackwardOf(true, dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF, N, I, R, gelu)
}
