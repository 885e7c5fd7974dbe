package kerneltest

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// mem allocates the suite's buffers where the backend under test can reach
// them (kernels.AllocF32: the Go heap for ref and cpu, the device's memory
// for a backend that is a kernels.Allocator) and frees them all at once
// when a group of subtests ends. The reference reads the same buffers: they
// are host-addressable (CUDA managed memory is).
type mem struct {
	b   kernels.Backend
	f32 [][]float32
	b16 [][]uint16
}

// zeros returns n zeroed float32 values in the backend's memory.
func (m *mem) zeros(n int) []float32 {
	x, err := kernels.AllocF32(m.b, n)
	if err != nil {
		panic(fmt.Sprintf("kerneltest: allocating %d float32 values on %s: %v", n, m.b.Name(), err))
	}
	m.f32 = append(m.f32, x)
	return x
}

// zeros16 is zeros for bfloat16 bits.
func (m *mem) zeros16(n int) []uint16 {
	x, err := kernels.AllocBF16(m.b, n)
	if err != nil {
		panic(fmt.Sprintf("kerneltest: allocating %d bfloat16 values on %s: %v", n, m.b.Name(), err))
	}
	m.b16 = append(m.b16, x)
	return x
}

// of copies x (host values: a literal, a golden file's) into the backend's memory.
func (m *mem) of(x []float32) []float32 {
	y := m.zeros(len(x))
	copy(y, x)
	return y
}

// free releases every buffer handed out so far.
func (m *mem) free() {
	for _, x := range m.f32 {
		kernels.FreeF32(m.b, x)
	}
	for _, x := range m.b16 {
		kernels.FreeBF16(m.b, x)
	}
	m.f32, m.b16 = nil, nil
}
