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
// logits of 4 sequences of a Qwen vocabulary; wrong sizes panic naming
// the op, and so, on a backend with memory of its own (kernels.Allocator),
// do a source that is not its memory and a destination that is.
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
			for i := range n {
				if math.Float32bits(dst[i]) != math.Float32bits(x[i]) {
					t.Fatalf("value %d of %d: %g, want %g", i, n, dst[i], x[i])
				}
			}
			for i := n; i < len(dst); i++ {
				if !math.IsNaN(float64(dst[i])) {
					t.Fatalf("value %d past n=%d written: %g", i, n, dst[i])
				}
			}
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
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("no panic")
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, "CopyToHost") {
					t.Fatalf("panic %q does not name the op", msg)
				}
			}()
			c.call()
		})
	}
}
