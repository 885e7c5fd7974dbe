package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// loraFirstCase is a LoRA forward of projections sharing an input x
// [n, c]: outputs outs, rank r, q, k and v's bias when bias.
type loraFirstCase struct {
	description string
	n, c, r     int
	outs        []int
	bias        bool
}

// TestLinearForwardBF16ManyAddOnHardware runs the 7B step's LoRA forward
// of q, k, v (with their bias) and of gate, up (8 × 1024 tokens, C 3584,
// rank 16, the bf16 precision) in both of train/model's orders: the base
// products first (LinearForwardBF16Many) and then out += u·Bᵀ (Matmul,
// beta 1), or out = u·Bᵀ first (beta 0) and the base products added onto
// it (LinearForwardBF16ManyAdd, GEMMs with beta 1). The outputs agree
// within 1e-4 (near's measure: the two orders differ by the sums'
// association and, on a GPU, by whatever algorithm cuBLAS picks for each
// beta), and it logs µs a call of each order, with the bytes the rank-r
// products no longer read (log LORAFIRST). With -test.short (the memcheck
// step) a small case only, untimed. Not run on a GPU yet.
func TestLinearForwardBF16ManyAddOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	cases := []loraFirstCase{
		{description: "q, k, v", n: 8 * 1024, c: 3584, r: 16, outs: []int{3584, 512, 512}, bias: true},
		{description: "gate, up", n: 8 * 1024, c: 3584, r: 16, outs: []int{18944, 18944}},
	}
	if testing.Short() {
		cases = []loraFirstCase{{description: "small q, k, v", n: 33, c: 40, r: 4, outs: []int{24, 8, 8}, bias: true}}
	}
	r := rand.New(rand.NewPCG(28, 17))
	var frees []func()
	defer func() {
		for _, f := range frees {
			f()
		}
	}()
	alloc := func(n int) []float32 {
		x, err := b.AllocF32(n)
		if err != nil {
			t.Fatal(err)
		}
		frees = append(frees, func() { b.FreeF32(x) })
		return x
	}
	fill := func(n int, scale float32) []float32 {
		x := alloc(n)
		fillUniform(r, x, scale)
		return x
	}
	for _, c := range cases {
		k := len(c.outs)
		x := fill(c.n*c.c, 1)
		weights, biases := make([][]uint16, k), make([][]float32, k)
		ut, bs, base, first := make([][]float32, k), make([][]float32, k), make([][]float32, k), make([][]float32, k)
		add := make([]bool, k)
		for i, oc := range c.outs {
			w, err := b.AllocBF16(oc * c.c)
			if err != nil {
				t.Fatal(err)
			}
			frees = append(frees, func() { b.FreeBF16(w) })
			kernels.ToBF16(w, fill(oc*c.c, float32(1/math.Sqrt(float64(c.c)))))
			weights[i] = w
			if c.bias {
				biases[i] = fill(oc, 1)
			}
			// u = Scale·x·Aᵀ as the model computes it, shared by both orders.
			a := fill(c.r*c.c, float32(1/math.Sqrt(float64(c.c))))
			ut[i] = alloc(c.n * c.r)
			b.LinearForward(ut[i], x, a, nil, c.n, c.c, c.r)
			b.Scale(ut[i], ut[i], 2, c.n*c.r)
			bs[i] = fill(oc*c.r, 0.1)
			base[i], first[i] = alloc(c.n*oc), alloc(c.n*oc) // each order writes them first
			add[i] = true
		}
		runBase := func() {
			b.LinearForwardBF16Many(base, x, weights, biases, c.n, c.c, c.outs)
			for i, oc := range c.outs {
				b.Matmul(base[i], ut[i], bs[i], c.n, oc, c.r, false, true, 1)
			}
		}
		runFirst := func() {
			for i, oc := range c.outs {
				b.Matmul(first[i], ut[i], bs[i], c.n, oc, c.r, false, true, 0)
			}
			b.LinearForwardBF16ManyAdd(first, x, weights, biases, c.n, c.c, c.outs, add)
		}
		runBase()
		runFirst()
		b.Synchronize()
		for i := range c.outs {
			t.Logf("%s: output %d: %.3g from the base product first", c.description, i, relErr(first[i], base[i]))
			near(t, c.description+": LoRA first against base first", first[i], base[i], 1e-4)
		}
		if testing.Short() {
			continue
		}
		tb, tf := timePerCall(b, runBase), timePerCall(b, runFirst)
		var sum int
		for _, oc := range c.outs {
			sum += oc
		}
		t.Logf("LORAFIRST %s: base first %.0f µs, LoRA first %.0f µs (%.2fx); the rank-r products read %.2f GB less",
			c.description, us(tb), us(tf), tb.Seconds()/tf.Seconds(), 4*float64(c.n)*float64(sum)/1e9)
	}
}
