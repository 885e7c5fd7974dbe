// Package hugepage asks the operating system to back large, long-lived
// buffers (model weights, the model's activation slabs) with transparent
// huge pages.
//
// Decoding one token streams every weight matrix from memory once, so decode
// speed is set by read bandwidth. With 4 KiB pages a 2 GB weight set spans
// half a million pages; under a virtual machine each TLB miss is a
// two-level page walk. On the 2-vCPU KVM machine Hone is benchmarked on (AMD
// EPYC Zen 4, Dec 2026), a plain AVX-512 read of 1 GiB on two threads ran at
// a median of 38 GB/s on 4 KiB pages and 42 GB/s on 2 MiB pages (eight
// alternating runs each); batch-1 decode gained less (train/model's
// allocMatrices gives the figures).
//
// Debian's default THP mode is "madvise": only ranges marked with
// MADV_HUGEPAGE get huge pages, and the Go runtime does not mark its heap.
// Advise marks the 2 MiB-aligned interior of a buffer and, where the kernel
// has it (Linux 6.1+), collapses the pages already faulted in
// (MADV_COLLAPSE), since Go may have zeroed a reused span before the caller
// sees it. Both are hints: failures are ignored and the buffer's contents
// never change. Faulting memory in as huge pages can be slower than as
// small ones (the kernel zeroes 2 MiB at a time, and may compact memory
// first): filling 2 GB took 1 to 5.5 s here against 1.3 to 1.8 s, a cost
// paid once per model load.
package hugepage
