package kernels

// HostCopier is implemented by a backend whose memory the host should not
// read in place: kernels/cuda's buffers are CUDA managed memory, valid on
// the host, but a host read migrates each page the device wrote to the host
// by a page fault, and the next kernel to touch it faults it back (issue
// #28 put about 10 ms of an H200 decode step down to reading its
// [32, 151936] logits so). CopyToHost
// moves such a buffer in one bulk transfer instead (cuMemcpyDtoH). Host
// backends (ref, cpu) do not implement it: their memory is the host's, and
// the function CopyToHost copies it.
type HostCopier interface {
	// CopyToHost overwrites dst [n], host memory (Go memory, not the
	// backend's), with src [n], the backend's memory, once the work queued
	// before it has finished. Like the ops, it panics naming itself on a
	// wrong size or on memory on the wrong side.
	CopyToHost(dst, src []float32, n int)
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
