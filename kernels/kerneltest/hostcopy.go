package kerneltest

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// copyToHost checks kernels.CopyToHost (the backend's HostCopier, or a
// plain copy for a host backend): n values of a longer source in the
// backend's memory land bit for bit in a longer Go destination, the rest
// of which stays untouched, at lengths around vector widths and a step's
// logits of 4 sequences of a Qwen vocabulary, and likewise into zeroed
// host memory of the backend's (AllocHostF32) on a HostCopier; wrong sizes
// panic naming the op, and so, on a backend with memory of its own
// (kernels.Allocator), do a source that is not its memory, a destination
// that is, and its host memory given to an op.
func (s suite) copyToHost(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 1000, 4 * 151936} {
		name := fmt.Sprintf("n=%d", n)
		t.Run(name, func(t *testing.T) {
			r := src(name)
			x := s.randn(r, n+3, 4)
			x[0] = float32(math.Inf(-1)) // a masked logit travels as it is
			dst := make([]float32, n+2)
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			kernels.CopyToHost(s.b, dst, x, n)
			same(t, "into Go memory", dst, x, n)
			h, ok := s.b.(kernels.HostCopier)
			if !ok {
				return
			}
			pinned, err := h.AllocHostF32(n + 2)
			if err != nil {
				t.Fatal(err)
			}
			defer h.FreeHostF32(pinned)
			for i, v := range pinned {
				if v != 0 {
					t.Fatalf("AllocHostF32: value %d is %g, want 0", i, v)
				}
				pinned[i] = float32(math.NaN())
			}
			h.CopyToHost(pinned, x, n)
			same(t, "into AllocHostF32's memory", pinned, x, n)
		})
	}
	f := s.m.zeros
	type badCase struct {
		name string
		call func()
	}
	cases := []badCase{
		{"short dst", func() { kernels.CopyToHost(s.b, make([]float32, 2), f(3), 3) }},
		{"short src", func() { kernels.CopyToHost(s.b, make([]float32, 3), f(2), 3) }},
		{"negative n", func() { kernels.CopyToHost(s.b, make([]float32, 3), f(3), -1) }},
	}
	if _, own := s.b.(kernels.Allocator); own {
		cases = append(cases,
			badCase{"src host memory", func() { kernels.CopyToHost(s.b, make([]float32, 3), make([]float32, 3), 3) }},
			badCase{"dst backend memory", func() { kernels.CopyToHost(s.b, f(3), f(3), 3) }},
			badCase{"dst inside a source's allocation", func() {
				x := f(8)
				kernels.CopyToHost(s.b, x[4:], x[:4], 4)
			}},
		)
	}
	if h, ok := s.b.(kernels.HostCopier); ok {
		// Host memory of the backend's is no operand of its ops.
		if _, own := s.b.(kernels.Allocator); own {
			pinned, err := h.AllocHostF32(4)
			if err != nil {
				t.Fatal(err)
			}
			defer h.FreeHostF32(pinned)
			cases = append(cases, badCase{"CopyToHost's host memory to an op (Scale)", func() { s.b.Scale(f(4), pinned, 2, 4) }})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("no panic")
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, "CopyToHost") && !strings.Contains(msg, "Scale") {
					t.Fatalf("panic %q does not name the op", msg)
				}
			}()
			c.call()
		})
	}
}

// same fails t unless the first n values of got are x's bit for bit and
// the rest of got is still NaN.
func same(t *testing.T, what string, got, x []float32, n int) {
	t.Helper()
	for i := range n {
		if math.Float32bits(got[i]) != math.Float32bits(x[i]) {
			t.Fatalf("%s: value %d of %d: %g, want %g", what, i, n, got[i], x[i])
		}
	}
	for i := n; i < len(got); i++ {
		if !math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: value %d past n=%d written: %g", what, i, n, got[i])
		}
	}
}
