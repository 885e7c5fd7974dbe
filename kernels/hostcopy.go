package kernels

// HostCopier is implemented by a backend whose memory the host should not
// read in place: kernels/cuda's buffers are CUDA managed memory, valid on
// the host, but a host read migrates each page the device wrote to the host
// by a page fault, and the next kernel to touch it faults it back (issue
// #28 put about 10 ms of an H200 decode step down to reading its
// [32, 151936] logits so). CopyToHost
// moves such a buffer in one bulk transfer instead (cuMemcpyDtoH), at its
// fastest into host memory of the backend's own (AllocHostF32: kernels/cuda
// hands out page-locked memory, which the copy fills by DMA). Host backends
// (ref, cpu) do not implement it: their memory is the host's, and the
// function CopyToHost copies it.
type HostCopier interface {
	// CopyToHost overwrites dst [n], host memory (Go memory or
	// AllocHostF32's, not the backend's device memory), with src [n], the
	// backend's memory, once the work queued before it has finished. Like
	// the ops, it panics naming itself on a wrong size or on memory on the
	// wrong side.
	CopyToHost(dst, src []float32, n int)
	// AllocHostF32 returns n zeroed float32 values of host memory that
	// CopyToHost fills fastest. It is no operand of the ops (RowMax and
	// ExpShift, the host's, aside). Its owner frees it (FreeHostF32)
	// before the backend closes.
	AllocHostF32(n int) ([]float32, error)
	// FreeHostF32 releases a slice AllocHostF32 returned (the whole
	// slice). Freeing nil does nothing.
	FreeHostF32(s []float32)
}

// CopyToHost copies src [n], b's memory, into dst [n], host memory: with
// b's HostCopier when b is one, else by copy (a host backend's memory is
// the host's already).
func CopyToHost(b Backend, dst, src []float32, n int) {
	if h, ok := b.(HostCopier); ok {
		h.CopyToHost(dst, src, n)
		return
	}
	NeedCopyToHost(dst, src, n)
	copy(dst[:n], src[:n])
}

// NeedCopyToHost panics unless n ≥ 0 and dst and src hold n values: the
// size checks of CopyToHost, for its implementations.
func NeedCopyToHost(dst, src []float32, n int) {
	const op = "CopyToHost"
	NeedSizes(op, n)
	Need(op, "dst", len(dst), n)
	Need(op, "src", len(src), n)
}

// HostUploader is implemented by a backend whose memory the host should
// not write in place either: a host write to kernels/cuda's managed memory
// migrates each page, which the buffer's allocation touched on the device,
// to the host by a page fault, and the device's next read faults it back
// (15 GB of a 7B model's weights each way at load). UploadBF16 moves host
// values into it in one bulk transfer instead (cuMemcpyHtoD). Host backends
// (ref, cpu) do not implement it: the function UploadBF16 copies.
type HostUploader interface {
	// UploadBF16 overwrites dst, the backend's memory, with src (host
	// memory, not the backend's; len(dst) values), once the work queued
	// before it has finished; nothing around dst is written. Like the ops,
	// it panics naming itself on a wrong size or on memory on the wrong
	// side.
	UploadBF16(dst, src []uint16)
}

// UploadBF16 copies src, host memory, into dst, b's memory (len(dst)
// values each): with b's HostUploader when b is one, else by copy.
func UploadBF16(b Backend, dst, src []uint16) {
	if u, ok := b.(HostUploader); ok {
		u.UploadBF16(dst, src)
		return
	}
	Need("UploadBF16", "src", len(src), len(dst))
	copy(dst, src)
}

// Synchronizer is implemented by a backend whose ops may return before
// the device has finished them (kernels/cuda with SetSyncEachOp(false)):
// Synchronize returns once every op called before it has finished, so
// that the host may read what they wrote (and write what they read) in
// the backend's memory in place. The backend synchronizes by itself where
// its own methods hand the host results (CopyToHost, SumSquares, RowMax,
// ExpShift) and before it frees memory; the callers synchronize where they
// read or write its memory on the host: train/model's Forward and Backward
// end with it (Pass.Logprob, Pass.Entropy and the adapter's gradients are
// read in place), and the model and adapter's loading, saving and merging
// call it before their host loops.
type Synchronizer interface {
	Synchronize()
}

// Synchronize calls b's Synchronize when b is a Synchronizer (a host
// backend's ops have finished when they return: nothing to wait for).
func Synchronize(b Backend) {
	if s, ok := b.(Synchronizer); ok {
		s.Synchronize()
	}
}
