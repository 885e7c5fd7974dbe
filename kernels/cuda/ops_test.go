package cuda_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/cuda/internal/ptxbuild"
)

// opsCase is one Ops call on the fake driver and the launches it must make.
type opsCase struct {
	name string
	call func(o *cuda.Ops, b func(n int) *cuda.Buffer) error
	want []cudafake.Launch
}

func dim(x, y, z int) cuda.Dim3 { return cuda.Dim3{X: x, Y: y, Z: z} }

// launch is the fake driver's record of a launch without dynamic shared
// memory.
func launch(kernel string, grid, block cuda.Dim3, params int) cudafake.Launch {
	return cudafake.Launch{Kernel: kernel, Grid: grid, Block: block, Params: params}
}

// runOpsCases runs each case on a fresh fake device with the embedded PTX
// loaded by LoadOps, and compares the launches the driver saw.
func runOpsCases(t *testing.T, cases []opsCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dev, o, drv, _ := openFakeOps(t) // the fake driver knows the kernels of the PTX loaded only
			buf := func(n int) *cuda.Buffer {
				b, err := dev.Alloc(max(n, 1))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			if err := c.call(o, buf); err != nil {
				t.Fatal(err)
			}
			got := drv.Launches()
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("launches\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

// TestOpsLaunchGeometry: each op of Ops launches its kernels, found in the
// embedded PTX, with the geometry its kernels' comments ask for, and
// nothing for an empty shape.
func TestOpsLaunchGeometry(t *testing.T) {
	runOpsCases(t, []opsCase{
		{"RMSNormForward C=896", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormForward(b(5*896), b(5), b(5*896), b(896), 5, 896, 1e-6)
		}, []cudafake.Launch{launch("rmsnorm_forward", dim(5, 1, 1), dim(256, 1, 1), 6)}},
		{"RMSNormForward C=33", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormForward(b(3*33), b(3), b(3*33), b(33), 3, 33, 1e-6)
		}, []cudafake.Launch{launch("rmsnorm_forward", dim(3, 1, 1), dim(64, 1, 1), 6)}},
		{"RMSNormForward N=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormForward(b(0), b(0), b(0), b(8), 0, 8, 1e-6)
		}, nil},
		{"RMSNormForwardAdd with outBF", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			x := b(5 * 896)
			return o.RMSNormForwardAdd(x, b(5*896), b(5), b(5*896/2), x, b(5*896), b(896), 5, 896, 1e-6)
		}, []cudafake.Launch{launch("rmsnorm_forward_add", dim(5, 1, 1), dim(256, 1, 1), 9)}},
		{"RMSNormForwardAdd without outBF", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormForwardAdd(b(3*33), b(3*33), b(3), nil, b(3*33), b(3*33), b(33), 3, 33, 1e-6)
		}, []cudafake.Launch{launch("rmsnorm_forward_add", dim(3, 1, 1), dim(64, 1, 1), 9)}},
		{"RMSNormForwardAdd N=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormForwardAdd(b(0), b(0), b(0), nil, b(0), b(0), b(8), 0, 8, 1e-6)
		}, nil},
		{"RMSNormBackward with dweight", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormBackward(b(7*70), b(70), b(7*70), b(7), b(7*70), b(70), 7, 70)
		}, []cudafake.Launch{
			launch("rmsnorm_backward", dim(7, 1, 1), dim(96, 1, 1), 6),
			launch("rmsnorm_backward_dweight", dim(3, 1, 1), dim(32, 8, 1), 6),
		}},
		{"RoPEForward Qwen2.5 q", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RoPEForward(b(70*14*64), b(70*14*64), b(70), b(32), 70, 14, 64, 32)
		}, []cudafake.Launch{launch("rope_forward", dim(123, 1, 1), dim(256, 1, 1), 8)}}, // 70·14·32 items
		{"RoPEBackward partial rotary", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RoPEBackward(b(3*2*10), b(3*2*10), b(3), b(3), 3, 2, 10, 3)
		}, []cudafake.Launch{launch("rope_backward", dim(1, 1, 1), dim(256, 1, 1), 8)}},
		{"RoPEForward no rotary dims, nil invFreq", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RoPEForward(b(4*8), b(4*8), b(4), nil, 4, 1, 8, 0)
		}, []cudafake.Launch{launch("rope_forward", dim(1, 1, 1), dim(256, 1, 1), 8)}},
		{"RoPEForward many tokens: grid capped", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RoPEForward(b(8192*28*128), b(8192*28*128), b(8192), b(64), 8192, 28, 128, 64)
		}, []cudafake.Launch{launch("rope_forward", dim(4096, 1, 1), dim(256, 1, 1), 8)}},
		{"SwiGLUForward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.SwiGLUForward(b(1000), b(1000), b(1000), 1000)
		}, []cudafake.Launch{launch("swiglu_forward", dim(4, 1, 1), dim(256, 1, 1), 4)}},
		{"SwiGLUBackward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.SwiGLUBackward(b(17), b(17), b(17), b(17), b(17), 17)
		}, []cudafake.Launch{launch("swiglu_backward", dim(1, 1, 1), dim(256, 1, 1), 6)}},
		{"SwiGLUForward n=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.SwiGLUForward(b(0), b(0), b(0), 0)
		}, nil},
		{"EmbeddingForward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.EmbeddingForward(b(9*896), b(9), b(100*896), 9, 896, 100)
		}, []cudafake.Launch{launch("embedding_forward", dim(9, 1, 1), dim(256, 1, 1), 5)}},
		{"EmbeddingForwardBF16 odd table", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.EmbeddingForwardBF16(b(2*3), b(2), b(8), 2, 3, 5) // 15 bf16 values in 8 elements
		}, []cudafake.Launch{launch("embedding_forward_bf16", dim(2, 1, 1), dim(32, 1, 1), 5)}},
		{"EmbeddingBackward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.EmbeddingBackward(b(50*8), b(17*8), b(17), 17, 8, 50)
		}, []cudafake.Launch{launch("embedding_sort", dim(1, 1, 1), dim(128, 1, 1), 3), launch("embedding_backward", dim(17, 1, 1), dim(32, 1, 1), 6)}},
		{"EmbeddingBackward C=3584", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.EmbeddingBackward(b(50*3584), b(300*3584), b(300), 300, 3584, 50)
		}, []cudafake.Launch{launch("embedding_sort", dim(3, 1, 1), dim(128, 1, 1), 3), launch("embedding_backward", dim(300, 14, 1), dim(256, 1, 1), 6)}},
		{"AdamW", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.AdamW(b(70001), b(70001), b(70001), b(70001), 70001, 3, kernels.DefaultAdamW(1e-3))
		}, []cudafake.Launch{launch("adamw", dim(274, 1, 1), dim(256, 1, 1), 13)}},
		{"Add in place", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			x := b(17)
			return o.Add(x, x, b(17), 17)
		}, []cudafake.Launch{launch("add", dim(1, 1, 1), dim(256, 1, 1), 4)}},
		{"Scale", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.Scale(b(1<<21), b(1<<21), 0.5, 1<<21)
		}, []cudafake.Launch{launch("scale", dim(4096, 1, 1), dim(256, 1, 1), 4)}},
		{"AXPY", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.AXPY(b(257), b(257), -1.5, 257)
		}, []cudafake.Launch{launch("axpy", dim(2, 1, 1), dim(256, 1, 1), 4)}},
		{"Add n=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.Add(b(0), b(0), b(0), 0)
		}, nil},
		{"LogSoftmaxForward Qwen vocabulary", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LogSoftmaxForward(b(4*151936), b(4*151936), 4, 151936)
		}, []cudafake.Launch{launch("logsoftmax_forward", dim(4, 1, 1), dim(256, 1, 1), 3)}},
		{"LogSoftmaxBackward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LogSoftmaxBackward(b(3*7), b(3*7), b(3*7), 3, 7)
		}, []cudafake.Launch{launch("logsoftmax_backward", dim(3, 1, 1), dim(32, 1, 1), 4)}},
		{"EntropyForward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.EntropyForward(b(17), b(17*1000), 17, 1000)
		}, []cudafake.Launch{launch("entropy_forward", dim(17, 1, 1), dim(256, 1, 1), 3)}},
		{"EntropyBackward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.EntropyBackward(b(2*300), b(2), b(2*300), 2, 300)
		}, []cudafake.Launch{launch("entropy_backward", dim(2, 1, 1), dim(256, 1, 1), 4)}},
		{"LogprobForward chunks 8, 8, 4", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LogprobForward(b(3), b(3), b(3), nil, b(3*16), b(20*16), b(3), 3, 16, 20, 8)
		}, []cudafake.Launch{
			launch("logprob_chunk", dim(3, 1, 1), dim(32, 1, 1), 6),
			launch("logprob_chunk", dim(3, 1, 1), dim(32, 1, 1), 6),
			launch("logprob_chunk", dim(3, 1, 1), dim(32, 1, 1), 6),
			launch("logprob_finish", dim(1, 1, 1), dim(256, 1, 1), 6),
		}},
		{"LogprobForward default chunk, expect", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			// Two blocks: the default one and 904 rows.
			const V = cuda.DefaultLogprobChunk + 904
			return o.LogprobForward(b(2), b(2), b(2), b(2*4), b(2*4), b(V*4), b(2), 2, 4, V, 0)
		}, []cudafake.Launch{
			launch("logprob_chunk", dim(2, 1, 1), dim(256, 1, 1), 6),
			launch("logprob_chunk", dim(2, 1, 1), dim(256, 1, 1), 6),
			launch("expect_scale", dim(2, 1, 1), dim(32, 1, 1), 3),
			launch("logprob_finish", dim(1, 1, 1), dim(256, 1, 1), 6),
			launch("logprob_expect", dim(2, 1, 1), dim(32, 1, 1), 3),
		}},
		{"LogprobBackwardExpect", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LogprobBackwardExpect(b(5*896), b(5), b(5*896), b(100*896), b(5), 5, 896, 100)
		}, []cudafake.Launch{launch("logprob_backward_expect", dim(5, 1, 1), dim(256, 1, 1), 7)}},
		{"SumSquares", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			_, err := o.SumSquares(b(1000), 1000)
			return err
		}, []cudafake.Launch{
			launch("sum_squares_partial", dim(4, 1, 1), dim(256, 1, 1), 3),
			launch("sum_squares_final", dim(1, 1, 1), dim(256, 1, 1), 3),
		}},
		{"SumSquares many values: grid capped", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			_, err := o.SumSquares(b(1<<20), 1<<20)
			return err
		}, []cudafake.Launch{
			launch("sum_squares_partial", dim(256, 1, 1), dim(256, 1, 1), 3),
			launch("sum_squares_final", dim(1, 1, 1), dim(256, 1, 1), 3),
		}},
		{"SumSquaresSegments: one block a segment", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			_, err := o.SumSquaresSegments(b(1<<20), []int{0, 1000, 5000}, []int{1000, 0, 1<<20 - 5000})
			return err
		}, []cudafake.Launch{launch("sum_squares_segments", dim(3, 1, 1), dim(256, 1, 1), 3)}},
		{"SumSquaresSegments none", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			_, err := o.SumSquaresSegments(b(10), nil, nil)
			return err
		}, nil},
		{"SumSquares n=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			_, err := o.SumSquares(b(0), 0)
			return err
		}, nil},
		{"RMSNormBackwardBF16 with dweight", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormBackwardBF16(b(7*70), b(70), b(7*70/2), b(7*70), b(7), b(7*70), b(70), 7, 70)
		}, []cudafake.Launch{
			launch("rmsnorm_backward_bf16", dim(7, 1, 1), dim(96, 1, 1), 7),
			launch("rmsnorm_backward_dweight", dim(3, 1, 1), dim(32, 8, 1), 6),
		}},
		{"RMSNormBackward frozen weight", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.RMSNormBackward(b(2*3584), nil, b(2*3584), b(2), b(2*3584), b(3584), 2, 3584)
		}, []cudafake.Launch{launch("rmsnorm_backward", dim(2, 1, 1), dim(256, 1, 1), 6)}},
	})
}

// TestOpsArgumentChecks: Ops refuses short, missing and foreign buffers
// and bad sizes, naming the op and the buffer, before launching anything.
func TestOpsArgumentChecks(t *testing.T) {
	drv := cudafake.NewDriver(1, 0)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	o, err := dev.LoadOps()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := openFake(t, 0)
	defer other.Close()
	b := func(d *cuda.Device, n int) *cuda.Buffer {
		x, err := d.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, c := range []struct {
		name string
		call func() error
		says string
	}{
		{"short out", func() error { return o.RMSNormForward(b(dev, 5), b(dev, 2), b(dev, 6), b(dev, 3), 2, 3, 1e-6) },
			"CUDA RMSNormForward: out has 5 elements, shape needs 6"},
		{"nil weight", func() error { return o.RMSNormForward(b(dev, 6), b(dev, 2), b(dev, 6), nil, 2, 3, 1e-6) },
			"CUDA RMSNormForward: weight is nil"},
		{"C=0", func() error { return o.RMSNormForward(b(dev, 1), b(dev, 1), b(dev, 1), b(dev, 1), 1, 0, 1e-6) },
			"C = 0: want at least 1"},
		{"short res", func() error {
			return o.RMSNormForwardAdd(b(dev, 6), b(dev, 6), b(dev, 2), nil, b(dev, 6), b(dev, 5), b(dev, 3), 2, 3, 1e-6)
		}, "CUDA RMSNormForwardAdd: res has 5 elements, shape needs 6"},
		{"short dinpBF", func() error {
			return o.RMSNormBackwardBF16(b(dev, 6), nil, b(dev, 2), b(dev, 6), b(dev, 2), b(dev, 6), b(dev, 3), 2, 3)
		}, "CUDA RMSNormBackwardBF16: dinpBF has 2 elements, shape needs 3"},
		{"short outBF", func() error {
			return o.RMSNormForwardAdd(b(dev, 6), b(dev, 6), b(dev, 2), b(dev, 2), b(dev, 6), b(dev, 6), b(dev, 3), 2, 3, 1e-6)
		}, "CUDA RMSNormForwardAdd: outBF has 2 elements, shape needs 3"},
		{"negative N", func() error { return o.RMSNormForward(b(dev, 1), b(dev, 1), b(dev, 1), b(dev, 1), -1, 1, 1e-6) },
			"negative size in N, C = [-1 1]"},
		{"too many elements", func() error {
			return o.RMSNormBackward(b(dev, 1), nil, b(dev, 1), b(dev, 1), b(dev, 1), b(dev, 1), 1<<20, 1<<12)
		}, "more than 2³¹−1 elements"},
		{"rotary dims over head dim", func() error { return o.RoPEForward(b(dev, 4), b(dev, 4), b(dev, 1), b(dev, 3), 1, 1, 4, 3) },
			"CUDA RoPEForward: rotary dims 2·3 outside [0, head dim 4]"},
		{"short pos", func() error { return o.RoPEBackward(b(dev, 8), b(dev, 8), b(dev, 1), b(dev, 1), 2, 1, 4, 1) },
			"CUDA RoPEBackward: pos has 1 elements, shape needs 2"},
		{"short up", func() error { return o.SwiGLUBackward(b(dev, 4), b(dev, 4), b(dev, 4), b(dev, 4), b(dev, 3), 4) },
			"CUDA SwiGLUBackward: up has 3 elements, shape needs 4"},
		{"short bf16 table", func() error { return o.EmbeddingForwardBF16(b(dev, 6), b(dev, 2), b(dev, 7), 2, 3, 5) },
			"CUDA EmbeddingForwardBF16: table has 7 elements, shape needs 8"},
		{"short dtable", func() error { return o.EmbeddingBackward(b(dev, 14), b(dev, 6), b(dev, 2), 2, 3, 5) },
			"CUDA EmbeddingBackward: dtable has 14 elements, shape needs 15"},
		{"AdamW step 0", func() error {
			return o.AdamW(b(dev, 1), b(dev, 1), b(dev, 1), b(dev, 1), 1, 0, kernels.DefaultAdamW(1e-3))
		},
			"CUDA AdamW: step 0: want ≥ 1"},
		{"short b", func() error { return o.Add(b(dev, 3), b(dev, 3), b(dev, 2), 3) }, "CUDA Add: b has 2 elements, shape needs 3"},
		{"AXPY nil a", func() error { return o.AXPY(b(dev, 3), nil, 1, 3) }, "CUDA AXPY: a is nil"},
		{"short dent", func() error { return o.EntropyBackward(b(dev, 6), b(dev, 1), b(dev, 6), 2, 3) },
			"CUDA EntropyBackward: dent has 1 elements, shape needs 2"},
		{"V=0", func() error { return o.LogSoftmaxForward(b(dev, 1), b(dev, 1), 1, 0) }, "CUDA LogSoftmaxForward: V = 0: want at least 1"},
		{"segment past x", func() error {
			_, err := o.SumSquaresSegments(b(dev, 10), []int{0, 8}, []int{4, 3})
			return err
		}, "CUDA SumSquaresSegments: x has 10 elements, shape needs 11"},
		{"negative segment", func() error {
			_, err := o.SumSquaresSegments(b(dev, 10), []int{-1}, []int{4})
			return err
		}, "CUDA SumSquaresSegments: negative size in segment 0's offset"},
		{"foreign dweight", func() error {
			return o.RMSNormBackward(b(dev, 6), b(other, 3), b(dev, 6), b(dev, 2), b(dev, 6), b(dev, 3), 2, 3)
		}, "CUDA RMSNormBackward: dweight is a buffer of another device"},
	} {
		if err := c.call(); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.says)
		}
	}
	if l := drv.Launches(); len(l) != 0 {
		t.Errorf("refused calls launched %+v", l)
	}
	if err := o.Unload(); err != nil {
		t.Fatal(err)
	}
	if drv.Modules() != 0 {
		t.Errorf("Unload left %d modules loaded", drv.Modules())
	}
	if err := o.RMSNormForward(b(dev, 6), b(dev, 2), b(dev, 6), b(dev, 3), 2, 3, 1e-6); err == nil || !strings.Contains(err.Error(), "module was unloaded") {
		t.Errorf("after Unload: %v", err)
	}
}

// TestUploadInt32: int32 operands reach device memory bit for bit, and
// UploadInt32 checks the length and a freed buffer like Upload.
func TestUploadInt32(t *testing.T) {
	dev, _, _ := openFake(t, 0)
	defer dev.Close()
	b, err := dev.Alloc(3)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{7, -1, 151935}
	if err := b.UploadInt32(ids); err != nil {
		t.Fatal(err)
	}
	for i, f := range download(t, b) {
		if int32(math.Float32bits(f)) != ids[i] {
			t.Errorf("element %d: bits %d, want %d", i, int32(math.Float32bits(f)), ids[i])
		}
	}
	if err := b.UploadInt32(ids[:2]); err == nil || !strings.Contains(err.Error(), "2 values into a buffer of 3") {
		t.Errorf("short: %v", err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.UploadInt32(ids); err == nil || !strings.Contains(err.Error(), "used after Free") {
		t.Errorf("freed: %v", err)
	}
}

// TestUploadBF16: bfloat16 values land two to an element, low half first
// (little endian, as the kernels index them), an odd count padded with 0.
func TestUploadBF16(t *testing.T) {
	dev, _, _ := openFake(t, 0)
	defer dev.Close()
	b, err := dev.Alloc(2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if err := b.UploadBF16([]uint16{0x3f80, 0xc000, 0x4040}); err != nil {
		t.Fatal(err)
	}
	got := download(t, b)
	if w0, w1 := uint32(0xc000)<<16|0x3f80, uint32(0x4040); math.Float32bits(got[0]) != w0 || math.Float32bits(got[1]) != w1 {
		t.Errorf("bits %#x %#x, want %#x %#x", math.Float32bits(got[0]), math.Float32bits(got[1]), w0, w1)
	}
	if err := b.UploadBF16(make([]uint16, 5)); err == nil || !strings.Contains(err.Error(), "5 values into a buffer of 2 elements (want 3)") {
		t.Errorf("wrong length: %v", err)
	}
}

// TestLogprobForwardGemms: LogprobForward's GEMMs are the row-major
// z [N, len] = hidden · weight[j0 : j0+len]ᵀ of each chunk, on views that
// step through the weight by len·C floats and write the same scratch z;
// its two scratch buffers (z, state) stay with Ops until Unload.
func TestLogprobForwardGemms(t *testing.T) {
	dev, o, drv, blas := openFakeOps(t)
	const N, C, V, chunk = 3, 16, 20, 8
	var bufs []*cuda.Buffer
	for _, n := range []int{N, N, N, N * C, V * C, N} {
		x, err := dev.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, x)
	}
	if err := o.LogprobForward(bufs[0], bufs[1], bufs[2], nil, bufs[3], bufs[4], bufs[5], N, C, V, chunk); err != nil {
		t.Fatal(err)
	}
	g := blas.Gemms()
	if len(g) != 3 {
		t.Fatalf("%d GEMMs, want 3", len(g))
	}
	for i, lens := range []int{8, 8, 4} {
		// row-major z [N, len] = hidden [N,C] · w [len,C]ᵀ is the
		// column-major call with m = len, n = N, w first (transposed).
		if g[i].M != lens || g[i].N != N || g[i].K != C || g[i].TransA != cuda.OpT || g[i].TransB != cuda.OpN || g[i].Beta != 0 {
			t.Errorf("GEMM %d: %+v", i, g[i])
		}
		if i > 0 && (g[i].A-g[i-1].A != cuda.DevPtr(4*chunk*C) || g[i].C != g[0].C || g[i].B != g[0].B) {
			t.Errorf("GEMM %d: weight at %#x after %#x (want %d bytes on), z at %#x, hidden at %#x", i, g[i].A, g[i-1].A, 4*chunk*C, g[i].C, g[i].B)
		}
	}
	if sn, sb := o.ScratchLive(); sn != 2 || sb != 4*(N*chunk+5*N) {
		t.Errorf("Ops holds %d scratch buffers (%d bytes) after LogprobForward, want z and state (%d bytes)", sn, sb, 4*(N*chunk+5*N))
	}
	if n, _ := dev.Live(); n != len(bufs)+2 {
		t.Errorf("%d buffers live after LogprobForward, want the %d of the test and 2 of scratch", n, len(bufs))
	}
	if err := o.Unload(); err != nil {
		t.Fatal(err)
	}
	if n, _ := drv.Live(); n != len(bufs) {
		t.Errorf("%d allocations on the fake after Unload, want the %d of the test", n, len(bufs))
	}
}

// TestOpsKnowsEveryKernel: Ops's table of kernels is exactly the kernels
// the .cu files define, each under its own file's module.
func TestOpsKnowsEveryKernel(t *testing.T) {
	mods, err := ptxbuild.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, m := range mods {
		src, err := os.ReadFile(m + ".cu")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ptxbuild.Kernels(src) {
			seen++
			if got, ok := cuda.KernelModules[k]; !ok || got != m {
				t.Errorf("kernel %s of %s.cu: Ops has it in module %q (present: %v)", k, m, got, ok)
			}
		}
	}
	if seen != len(cuda.KernelModules) {
		t.Errorf("the .cu files define %d kernels, Ops lists %d", seen, len(cuda.KernelModules))
	}
}
