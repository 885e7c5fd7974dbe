package cuda_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestAttentionLaunchGeometry: the attention ops launch attention.cu's
// kernels, found in the embedded PTX, on blocks of 128 threads, one per
// 16 (query, head) rows of a KV head (forward, dq) or 16 key rows and KV
// head (dkdv), and nothing for no tokens.
func TestAttentionLaunchGeometry(t *testing.T) {
	runOpsCases(t, []opsCase{
		{"AttentionForward Qwen2.5-0.5B, 2 sequences", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			const N, H, KVH, D = 70, 14, 2, 64
			return o.AttentionForward(b(N*H*D), b(N*H), b(N*H*D), b(N*KVH*D), b(N*KVH*D), b(3), 2, N, H, KVH, D, 0.125)
		}, []cudafake.Launch{launch("attention_forward", dim(31, 2, 1), dim(128, 1, 1), 14)}}, // 70·7 rows a KV head
		{"AttentionForward no GQA", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			const N, H, KVH, D = 33, 3, 3, 8
			return o.AttentionForward(b(N*H*D), b(N*H), b(N*H*D), b(N*KVH*D), b(N*KVH*D), b(2), 1, N, H, KVH, D, 0.35)
		}, []cudafake.Launch{launch("attention_forward", dim(3, 3, 1), dim(128, 1, 1), 14)}},
		{"AttentionWindowForward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.AttentionWindowForward(b(16*4*256), b(16*4), b(16*4*256), b(16*256), b(16*256), b(2), 1, 16, 4, 1, 256, 4, 0.0625)
		}, []cudafake.Launch{launch("attention_forward", dim(4, 1, 1), dim(128, 1, 1), 14)}},
		{"AttentionForward N=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.AttentionForward(b(0), b(0), b(0), b(0), b(0), b(1), 0, 0, 2, 1, 8, 1)
		}, nil},
		{"AttentionBackward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			const N, H, KVH, D = 33, 4, 2, 128
			x, kv := b(N*H*D), b(N*KVH*D)
			return o.AttentionBackward(b(N*H*D), b(N*KVH*D), b(N*KVH*D), x, x, b(N*H), x, kv, kv, b(4), 3, N, H, KVH, D, 0.09)
		}, []cudafake.Launch{
			launch("attention_backward_dq", dim(5, 2, 1), dim(128, 1, 1), 15), // 33·2 rows a KV head
			launch("attention_backward_dkdv", dim(3, 2, 1), dim(128, 1, 1), 16),
		}},
		{"AttentionWindowBackward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			const N, H, KVH, D = 16, 8, 8, 16
			x := b(N * H * D)
			return o.AttentionWindowBackward(b(N*H*D), b(N*KVH*D), b(N*KVH*D), x, x, b(N*H), x, x, x, b(2), 1, N, H, KVH, D, 1, 0.25)
		}, []cudafake.Launch{
			launch("attention_backward_dq", dim(1, 8, 1), dim(128, 1, 1), 15),
			launch("attention_backward_dkdv", dim(1, 8, 1), dim(128, 1, 1), 16),
		}},
		{"AttentionBackward N=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			x := b(0)
			return o.AttentionBackward(x, x, x, x, x, x, x, x, x, b(1), 0, 0, 2, 2, 4, 1)
		}, nil},
		{"AttentionDecode one token, cache with spare rows", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.AttentionDecode(b(14*64), b(14*64), b(300*2*64), b(300*2*64), 1, 257, 14, 2, 64, 0.125)
		}, []cudafake.Launch{launch("attention_forward", dim(1, 2, 1), dim(128, 1, 1), 14)}}, // 7 heads a KV head
		{"AttentionDecode 17 tokens", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.AttentionDecode(b(17*4*8), b(17*4*8), b(20*8), b(20*8), 17, 20, 4, 1, 8, 0.35)
		}, []cudafake.Launch{launch("attention_forward", dim(5, 1, 1), dim(128, 1, 1), 14)}},
	})
}

// TestAttentionPlans: the arguments the plans hand attention.cu's kernels:
// no window is W = the key count, a window longer than the keys is clamped
// to it, and decode is one sequence (no seqOff, S = 0) without lse, its
// queries at key positions Tk−Tq ….
func TestAttentionPlans(t *testing.T) {
	out, lse, q, k, v := []float32{1}, []float32{2}, []float32{3}, []float32{4}, []float32{5}
	seqOff := []int32{0, 3, 7}
	for _, c := range []struct {
		name  string
		steps []cuda.Step
		want  string
	}{
		{"causal", cuda.PlanAttention(out, lse, q, k, v, seqOff, 2, 7, 7, 4, 2, 8, 7, 0, 0.5),
			"attention_forward {1 2 1} {128 1 1} [[1] [2] [3] [4] [5] [0 3 7] 2 7 4 2 8 7 0 0.5]"},
		{"window past the keys", cuda.PlanAttention(out, lse, q, k, v, seqOff, 2, 7, 7, 4, 2, 8, 1<<30, 0, 0.5),
			"attention_forward {1 2 1} {128 1 1} [[1] [2] [3] [4] [5] [0 3 7] 2 7 4 2 8 7 0 0.5]"},
		{"decode", cuda.PlanAttention(out, []float32(nil), q, k, v, []int32(nil), 0, 3, 40, 4, 2, 8, 40, 37, 0.5),
			"attention_forward {1 2 1} {128 1 1} [[1] [] [3] [4] [5] [] 0 3 4 2 8 40 37 0.5]"},
		{"backward window", cuda.PlanAttentionBackward(out, out, out, out, out, lse, q, k, v, seqOff, 2, 33, 4, 2, 8, 5, 0.5),
			"attention_backward_dq {5 2 1} {128 1 1} [[1] [1] [1] [2] [3] [4] [5] [0 3 7] 2 33 4 2 8 5 0.5]\n" +
				"attention_backward_dkdv {3 2 1} {128 1 1} [[1] [1] [1] [1] [2] [3] [4] [5] [0 3 7] 2 33 4 2 8 5 0.5]"},
		{"backward window past N", cuda.PlanAttentionBackward(out, out, out, out, out, lse, q, k, v, seqOff, 2, 7, 4, 2, 8, 100, 0.5),
			"attention_backward_dq {1 2 1} {128 1 1} [[1] [1] [1] [2] [3] [4] [5] [0 3 7] 2 7 4 2 8 7 0.5]\n" +
				"attention_backward_dkdv {1 2 1} {128 1 1} [[1] [1] [1] [1] [2] [3] [4] [5] [0 3 7] 2 7 4 2 8 7 0.5]"},
	} {
		var got []string
		for _, s := range c.steps {
			got = append(got, fmt.Sprintf("%s %v %v %v", s.Kernel, s.Grid, s.Block, s.Args))
		}
		if g := strings.Join(got, "\n"); g != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, g, c.want)
		}
	}
}

// TestAttentionArgumentChecks: the attention ops refuse bad head counts,
// head dims the kernels do not hold, windows, sequence counts, and short
// or missing buffers, naming the op and the operand, before launching.
func TestAttentionArgumentChecks(t *testing.T) {
	dev, o, drv, _ := openFakeOps(t)
	b := deviceAlloc(t, dev)
	// fwd is AttentionForward on N=4 tokens, H=2, KVH=1, D=8 with one buffer replaced.
	fwd := func(name string, x *cuda.Buffer, S, D int) func() error {
		bufs := map[string]*cuda.Buffer{"out": b(64), "lse": b(8), "q": b(64), "k": b(32), "v": b(32), "seqOff": b(2)}
		if name != "" {
			bufs[name] = x
		}
		return func() error {
			return o.AttentionForward(bufs["out"], bufs["lse"], bufs["q"], bufs["k"], bufs["v"], bufs["seqOff"], S, 4, 2, 1, D, 1)
		}
	}
	for _, c := range []struct {
		name string
		call func() error
		says string
	}{
		{"short lse", fwd("lse", b(7), 1, 8), "CUDA AttentionForward: lse has 7 elements, shape needs 8"},
		{"short v", fwd("v", b(31), 1, 8), "CUDA AttentionForward: v has 31 elements, shape needs 32"},
		{"nil seqOff", fwd("seqOff", nil, 1, 8), "CUDA AttentionForward: seqOff is nil"},
		{"short seqOff", fwd("", nil, 2, 8), "CUDA AttentionForward: seqOff has 2 elements, shape needs 3"},
		{"no sequences", fwd("", nil, 0, 8), "CUDA AttentionForward: S = 0 sequences for N = 4 tokens"},
		{"head dim over 256", fwd("", nil, 1, 257), "head dim D = 257 outside [1, 256]"},
		{"head dim 0", fwd("", nil, 1, 0), "head dim D = 0 outside [1, 256]"},
		{"heads not a multiple", func() error {
			return o.AttentionForward(b(48), b(6), b(48), b(32), b(32), b(2), 1, 2, 3, 2, 8, 1)
		}, "CUDA AttentionForward: 3 query heads not a multiple of 2 KV heads"},
		{"window 0", func() error {
			return o.AttentionWindowForward(b(8), b(1), b(8), b(8), b(8), b(2), 1, 1, 1, 1, 8, 0, 1)
		}, "CUDA AttentionWindowForward: window W = 0: want at least 1"},
		{"backward short dk", func() error {
			x := b(64)
			return o.AttentionBackward(x, b(31), b(32), x, x, b(8), x, b(32), b(32), b(2), 1, 4, 2, 1, 8, 1)
		}, "CUDA AttentionBackward: dk has 31 elements, shape needs 32"},
		{"window backward nil dout", func() error {
			x := b(64)
			return o.AttentionWindowBackward(x, b(32), b(32), nil, x, b(8), x, b(32), b(32), b(2), 1, 4, 2, 1, 8, 2, 1)
		}, "CUDA AttentionWindowBackward: dout is nil"},
		{"decode more queries than cache", func() error {
			return o.AttentionDecode(b(16), b(16), b(8), b(8), 2, 1, 1, 1, 8, 1)
		}, "CUDA AttentionDecode: Tq = 2 new tokens over a cache of Tk = 1 rows"},
		{"decode short cache", func() error {
			return o.AttentionDecode(b(8), b(8), b(8*5-1), b(8*5), 1, 5, 1, 1, 8, 1)
		}, "CUDA AttentionDecode: kCache has 39 elements, shape needs 40"},
		{"decode negative Tq", func() error {
			return o.AttentionDecode(b(8), b(8), b(8), b(8), -1, 1, 1, 1, 8, 1)
		}, "CUDA AttentionDecode: negative size in Tq, H, D"},
	} {
		if err := c.call(); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.says)
		}
	}
	if l := drv.Launches(); len(l) != 0 {
		t.Errorf("refused calls launched %+v", l)
	}
}
