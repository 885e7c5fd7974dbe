package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestLoRABackwardManyOnHardware runs the 7B step's LoRA backward of q, k,
// v and of gate, up (8 × 1024 tokens, In 3584, rank 16, the bf16
// precision) as one LoRABackwardMany each and as the Matmuls one
// projection at a time (loraOneAtATime, the model's path on other
// backends): the results agree within tf32Tol, and it logs µs a call of
// each side by side with the bytes train/model's traffic count gives them
// (log LORAMANY). With -test.short (the memcheck step) it checks the small
// cases of TestLoRABackwardMany only. Not run on a GPU yet.
func TestLoRABackwardManyOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	cases := []loraManyCase{{outs: []int{3584, 512, 512}, set: true, description: "q, k, v"}, {outs: []int{18944, 18944}, set: true, description: "gate, up"}}
	for i := range cases {
		cases[i].n, cases[i].in, cases[i].r, cases[i].scale = 8*1024, 3584, 16, 2
	}
	if testing.Short() {
		cases = loraManyCases
	}
	compareLoRAMany(t, b, cases, !testing.Short())
}

// compareLoRAMany runs each case on b as LoRABackwardMany and one
// projection at a time, checks the two within tf32Tol, and with timed
// logs both's µs a call and traffic.
func compareLoRAMany(t *testing.T, b *cuda.Backend, cases []loraManyCase, timed bool) {
	r := rand.New(rand.NewPCG(28, 16))
	alloc, freeAll := freeingF32(t, b)
	defer freeAll()
	fill := func(n int) []float32 {
		x := alloc(n)
		fillUniform(r, x, 1)
		return x
	}
	maxOut, maxN, maxIn, maxR := 0, 0, 0, 0
	for _, c := range cases {
		maxN, maxIn, maxR = max(maxN, c.n), max(maxIn, c.in), max(maxR, c.r)
		for _, out := range c.outs {
			maxOut = max(maxOut, out)
		}
	}
	// One dout and one x at their largest, shared by every projection
	// (inputs may alias; only the outputs are each their own).
	dout, x, g := fill(maxN*maxOut), fill(maxN*maxIn), alloc(maxN*maxR)
	for _, c := range cases {
		data := func() loraManyData {
			d := loraManyData{x: x[:c.n*c.in]}
			if !c.noDX {
				d.dx = fill(c.n * c.in)
			}
			for _, out := range c.outs {
				d.douts = append(d.douts, dout[:c.n*out])
				d.us = append(d.us, fill(c.n*c.r))
				d.as = append(d.as, fill(c.r*c.in))
				d.bs = append(d.bs, fill(out*c.r))
				d.das = append(d.das, fill(c.r*c.in))
				d.dbs = append(d.dbs, fill(out*c.r))
			}
			return d
		}
		many, one := data(), data()
		copy(one.dx, many.dx) // the same inputs and starting outputs for both
		for i := range one.us {
			for _, p := range [][2][]float32{{one.us[i], many.us[i]}, {one.as[i], many.as[i]}, {one.bs[i], many.bs[i]}, {one.das[i], many.das[i]}, {one.dbs[i], many.dbs[i]}} {
				copy(p[0], p[1])
			}
		}
		runMany := func() {
			b.LoRABackwardMany(many.dx, many.douts, many.us, many.x, many.as, many.bs, many.das, many.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
		}
		runOne := func() { loraOneAtATime(b, c, one, g[:c.n*c.r]) }
		runMany()
		runOne()
		b.Synchronize()
		names, gs := many.outputs()
		_, os := one.outputs()
		for i := range names {
			t.Logf("%s: %s: %.3g from one at a time", c.description, names[i], relErr(gs[i], os[i]))
			near(t, c.description+": "+names[i], gs[i], os[i], tf32Tol)
		}
		if !timed {
			continue
		}
		tm, to := timePerCall(b, runMany), timePerCall(b, runOne)
		// train/model's traffic count (trafficBackend) of each path.
		var bm, bo float64
		k, kR := len(c.outs), len(c.outs)*c.r
		for _, out := range c.outs {
			db := 4 * float64(out*c.n+c.n*c.r+2*out*c.r)
			gp := 4 * float64(c.n*out+out*c.r+c.n*c.r)
			bm += db + gp
			bo += db + gp + 8*float64(c.n*c.r) + 4*float64(c.r*c.n+c.n*c.in+2*c.r*c.in)
		}
		bm += 4*float64(kR*c.n+c.n*c.in+kR*c.in) + float64(k)*4*3*float64(c.r*c.in) // DA's product, the axpys
		if !c.noDX {
			bm += float64(k)*4*2*float64(c.r*c.in) + 4*float64(c.n*kR+kR*c.in+c.n*c.in) // the scales, dx's product
			if !c.set {
				bm += 4 * float64(c.n*c.in)
			}
			for i := range c.outs {
				bo += 4 * float64(c.n*c.r+c.r*c.in+c.n*c.in)
				if i > 0 || !c.set {
					bo += 4 * float64(c.n*c.in)
				}
			}
		}
		t.Logf("LORAMANY %s: LoRABackwardMany %.0f µs (%.2f GB, %.0f GB/s), one at a time %.0f µs (%.2f GB, %.0f GB/s): %.2fx",
			c.description, us(tm), bm/1e9, bm/tm.Seconds()/1e9, us(to), bo/1e9, bo/to.Seconds()/1e9, to.Seconds()/tm.Seconds())
	}
}

// TestLoRABackwardManyRoundedOnHardware runs the 7B step's LoRA backward
// of gate and up (8 × 1024 tokens, In 3584, Out 18944, rank 16, the bf16
// precision) as LoRABackwardMany on float32 douts and as
// LoRABackwardManyRounded on their bfloat16 roundings: the results agree
// within kernels.BF16ComputeTol (logged), and it logs µs a call of each
// (log LORAROUNDED) with the bytes of the two douts each reads twice.
// With -test.short (the memcheck step) it runs the small cases of
// TestLoRABackwardMany only. Not run on a GPU yet.
func TestLoRABackwardManyRoundedOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	cases := []loraManyCase{{outs: []int{18944, 18944}, set: true, n: 8 * 1024, in: 3584, r: 16, scale: 2, description: "gate, up"}}
	if testing.Short() {
		cases = loraManyCases
	}
	alloc, allocBF := backendAllocs(t, b)
	for ci, c := range cases {
		plain := newLoRAManyData(c, uint64(ci), alloc)
		rounded := newLoRAManyData(c, uint64(ci), alloc)
		doutBFs, _ := roundedLoRAInputs(c, rounded, allocBF)
		runPlain := func() {
			b.LoRABackwardMany(plain.dx, plain.douts, plain.us, plain.x, plain.as, plain.bs, plain.das, plain.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
		}
		runRounded := func() {
			b.LoRABackwardManyRounded(rounded.dx, doutBFs, rounded.us, rounded.x, rounded.as, rounded.bs, rounded.das, rounded.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
		}
		runPlain()
		runRounded()
		b.Synchronize()
		names, ps := plain.outputs()
		_, rs := rounded.outputs()
		for i := range names {
			t.Logf("%s: %s: %.3g from LoRABackwardMany on float32 douts", c.description, names[i], relErr(rs[i], ps[i]))
			near(t, c.description+": "+names[i], rs[i], ps[i], kernels.BF16ComputeTol)
		}
		if testing.Short() {
			continue
		}
		tp, tr := timePerCall(b, runPlain), timePerCall(b, runRounded)
		var douts float64
		for _, out := range c.outs {
			douts += float64(c.n * out)
		}
		t.Logf("LORAROUNDED %s: LoRABackwardMany %.0f µs (douts read twice as float32: %.2f GB), LoRABackwardManyRounded %.0f µs (as bfloat16: %.2f GB): %.2fx",
			c.description, us(tp), 8*douts/1e9, us(tr), 4*douts/1e9, tp.Seconds()/tr.Seconds())
	}
}

// TestMatmulBF16OnHardware: Backend.MatmulBF16 in the bf16 precision on
// every matmulBF16Cases case (M 7, N 5, K 131) within 1e-5 of kernels/ref's
// Matmul on the rounded operands; then (not with -test.short) the 7B
// step's down-projection DA += gᵀ·act (R 16, I 18944, 8 × 1024 tokens) as
// MatmulBF16 on act's bfloat16 rounding and as Matmul (TF32) on the
// float32 act: within kernels.BF16ComputeTol of each other, both timed
// (log MATMULBF16). Not run on a GPU yet.
func TestMatmulBF16OnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	alloc, allocBF := backendAllocs(t, b)
	r := rand.New(rand.NewPCG(28, 131))
	f32 := randnIn(alloc, r)
	bf := func(x []float32) []uint16 {
		y := allocBF(len(x))
		kernels.ToBF16(y, x)
		return y
	}
	const M, N, K = 7, 5, 131
	for _, tc := range matmulBF16Cases() {
		a, bm, c := f32(M*K, 1), f32(K*N, 1), f32(M*N, 1)
		want := matmulBF16Want(c, a, bm, M, N, K, tc)
		var aBF, bBF []uint16
		if tc.aBF {
			aBF, a = bf(a), nil
		}
		if tc.bBF {
			bBF, bm = bf(bm), nil
		}
		b.MatmulBF16(c, a, aBF, bm, bBF, M, N, K, tc.transA, tc.transB, tc.beta)
		b.Synchronize()
		near(t, tc.String(), c, want, 1e-5)
	}
	if testing.Short() {
		return
	}
	const R, I, T = 16, 18944, 8 * 1024
	g, act := f32(T*R, 1), f32(T*I, 1)
	actBF := bf(act)
	da, daBF := f32(R*I, 1), f32(R*I, 1)
	copy(daBF, da)
	runF32 := func() { b.Matmul(da, g, act, R, I, T, true, false, 1) }
	runBF := func() { b.MatmulBF16(daBF, g, nil, nil, actBF, R, I, T, true, false, 1) }
	runF32()
	runBF()
	b.Synchronize()
	t.Logf("down DA on act's rounding: %.3g from the float32 act's", relErr(daBF, da))
	near(t, "down DA on act's rounding", daBF, da, kernels.BF16ComputeTol)
	tf, tb := timePerCall(b, runF32), timePerCall(b, runBF)
	t.Logf("MATMULBF16 down DA += gᵀ·act (M %d N %d K %d): Matmul on float32 act %.0f µs (%.2f GB read), MatmulBF16 on its rounding %.0f µs (%.2f GB): %.2fx",
		R, I, T, us(tf), 4*float64(T*I)/1e9, us(tb), 2*float64(T*I)/1e9, tf.Seconds()/tb.Seconds())
}

// backendAllocs returns allocators of b's float32 and bfloat16 memory whose
// buffers are freed when t ends: before hardwareBackend's cleanup closes
// b, t's cleanups running last registered first.
func backendAllocs(t *testing.T, b *cuda.Backend) (f32 func(n int) []float32, bf16 func(n int) []uint16) {
	f32 = func(n int) []float32 {
		x, err := b.AllocF32(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.FreeF32(x) })
		return x
	}
	bf16 = func(n int) []uint16 {
		x, err := b.AllocBF16(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.FreeBF16(x) })
		return x
	}
	return f32, bf16
}

// randnIn returns a function that allocates n float32 values with alloc
// (backendAllocs') and fills them with scale·N(0, 1) draws (fillNormal's,
// seeded from r).
func randnIn(alloc func(n int) []float32, r *rand.Rand) func(n int, scale float64) []float32 {
	return func(n int, scale float64) []float32 {
		x := alloc(n)
		fillNormal(r, x, scale)
		return x
	}
}
