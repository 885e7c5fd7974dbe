package cuda_test

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestLoRAForwardManyOnHardware runs the 7B step's LoRA forward of q, k,
// v and of gate, up (8 × 1024 tokens, In 3584, rank 16, scale 2, the bf16
// precision) as one LoRAForwardMany each and as LinearForward, Scale and
// Matmul one projection at a time (loraFwdOneAtATime, the model's path on
// other backends): us and outs agree within 1e-5 (each step rounds as
// before; only cuBLAS's sum order for the wider x product may differ,
// logged; tf32Tol where the rank-r products are TF32), and it logs µs a call of each side by side with the bytes
// train/model's traffic count gives them (log LORAFWDMANY). With
// -test.short (the memcheck step) it checks the small cases of
// TestLoRAForwardMany only. Not run on a GPU yet.
func TestLoRAForwardManyOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	cases := []loraFwdCase{{outs: []int{3584, 512, 512}, description: "q, k, v"}, {outs: []int{18944, 18944}, description: "gate, up"}}
	for i := range cases {
		cases[i].n, cases[i].in, cases[i].r, cases[i].scale = 8*1024, 3584, 16, 2
	}
	if testing.Short() {
		cases = loraFwdCases
	}
	alloc, _ := backendAllocs(t, b)
	for ci, c := range cases {
		many := newLoRAFwdData(c, uint64(ci), alloc)
		one := newLoRAFwdData(c, uint64(ci), alloc)
		runMany := func() {
			b.LoRAForwardMany(many.outs, many.us, many.x, many.as, many.bs, c.n, c.in, c.r, c.outs, c.scale)
		}
		runOne := func() { loraFwdOneAtATime(b, c, one) }
		runMany()
		runOne()
		b.Synchronize()
		names, ms := many.outputs()
		_, os := one.outputs()
		tol := 1e-5
		if c.r >= cuda.TF32MinK { // a last bit of u moved can move its TF32 rounding
			tol = tf32Tol
		}
		for i := range names {
			t.Logf("%s: %s: %.3g from one at a time", c.description, names[i], relErr(ms[i], os[i]))
			near(t, c.description+": "+names[i], ms[i], os[i], tol)
		}
		if testing.Short() {
			continue
		}
		tm, to := timePerCall(b, runMany), timePerCall(b, runOne)
		// train/model's traffic count (trafficBackend) of each path.
		k, kR := len(c.outs), len(c.outs)*c.r
		bm := 4*float64(k*2*c.r*c.in) + 4*float64(c.n*c.in+kR*c.in+c.n*kR) // the A's copied, the x product
		bo := 0.0
		for _, out := range c.outs {
			tail := 4*float64(2*c.n*c.r) + 4*float64(c.n*c.r+out*c.r+c.n*out) // u scaled, the rank-r product
			bm += tail
			bo += tail + 4*float64(c.n*c.in+c.r*c.in+c.n*c.r) // each its own x product
		}
		t.Logf("LORAFWDMANY %s: LoRAForwardMany %.0f µs (%.2f GB, %.0f GB/s), one at a time %.0f µs (%.2f GB, %.0f GB/s): %.2fx",
			c.description, us(tm), bm/1e9, bm/tm.Seconds()/1e9, us(to), bo/1e9, bo/to.Seconds()/1e9, to.Seconds()/tm.Seconds())
	}
}
