package kernels

// Allocator is implemented by a backend whose ops can only reach memory it
// allocated itself: kernels/cuda hands out CUDA managed memory, whose
// addresses are valid on the host and on the device, so a buffer stays a
// plain []float32 (views are sub-slices, as everywhere in train/model) while
// its pages live on the GPU. Backends that compute on the host (ref, cpu)
// do not implement it; AllocF32 and AllocBF16 then use make.
//
// Memory from an Allocator is not Go heap memory: the garbage collector does
// not free it, so its owner frees it (FreeF32, FreeBF16) before the backend
// closes. Token ids, positions, sequence offsets and targets ([]int32) stay
// host slices: they are the edges, and a backend copies them in itself.
type Allocator interface {
	// AllocF32 returns n zeroed float32 values in the backend's memory.
	AllocF32(n int) ([]float32, error)
	// AllocBF16 returns n zeroed bfloat16 values (bits) in the backend's memory.
	AllocBF16(n int) ([]uint16, error)
	// FreeF32 releases a slice AllocF32 returned (the whole slice, not a
	// view into it). Freeing nil does nothing.
	FreeF32(s []float32)
	// FreeBF16 releases a slice AllocBF16 returned. Freeing nil does nothing.
	FreeBF16(s []uint16)
}

// AllocF32 returns n zeroed float32 values where b's ops can reach them:
// from b's Allocator when it has one, else from the Go heap.
func AllocF32(b Backend, n int) ([]float32, error) {
	if a, ok := b.(Allocator); ok {
		return a.AllocF32(n)
	}
	return make([]float32, n), nil
}

// AllocBF16 is AllocF32 for bfloat16 bits.
func AllocBF16(b Backend, n int) ([]uint16, error) {
	if a, ok := b.(Allocator); ok {
		return a.AllocBF16(n)
	}
	return make([]uint16, n), nil
}

// FreeF32 releases s when b allocated it (b is an Allocator); for a host
// backend the garbage collector does.
func FreeF32(b Backend, s []float32) {
	if a, ok := b.(Allocator); ok {
		a.FreeF32(s)
	}
}

// FreeBF16 is FreeF32 for bfloat16 bits.
func FreeBF16(b Backend, s []uint16) {
	if a, ok := b.(Allocator); ok {
		a.FreeBF16(s)
	}
}
