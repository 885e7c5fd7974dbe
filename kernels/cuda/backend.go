package cuda

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// Backend is kernels.Backend on one CUDA device, with its buffers in CUDA
// managed memory: it is a kernels.Allocator, and AllocF32 and AllocBF16
// hand out plain slices over cuMemAllocManaged memory, whose addresses are
// valid on the host and on the device. Views are sub-slices, as everywhere
// in the model. Every op checks that each float32 or bfloat16 argument lies
// inside one of the backend's live allocations, and panics naming the op
// and the argument when one does not (memory from make would be a host
// pointer the device cannot read). The int32 edges — token ids, positions,
// sequence offsets, targets — stay host slices: the backend copies them
// into device scratch of its own (cuMemAlloc memory, not managed) with one
// synchronous cuMemcpyHtoD per call, so that no managed page moves
// between host and device for them.
//
// Every op runs on the device — Ops' kernels, and cuBLAS for the products
// (kernels.Backend's GEMMs, the linear layers, the chunked logprob), and
// SumSquares too (a reduction kernel whose one double the host reads).
// RowMax and ExpShift, the sampler's row ops,
// run on the caller's goroutine on the host by design, on any slice.
//
// By default every op returns after the device has finished it
// (cuCtxSynchronize), so the host may read any result at once, and an op's
// failure on the device panics in that op. The cost is a round trip to the
// driver per op (at least about 12 µs on an H200) and an idle GPU between
// ops while the host launches the next: the launch overhead of the model's
// ~20 ops a layer is not hidden behind running kernels. The stream-ordered
// mode (SetSyncEachOp(false), stream.go; not yet run on a GPU) queues the
// ops without waiting and synchronizes only where the host reads or memory
// is freed; the model says where its host reads are (kernels.Synchronize).
//
// Memory: AllocF32 zeroes its memory on the device (cuMemsetD32), so its
// pages start there; a host write (weights loaded by the host) migrates the
// pages it touches to the host, and the next kernel faults them back. cuMemPrefetchAsync and cuMemAdvise, which
// would move or pin them ahead of time, are not bound: their signatures
// changed between CUDA 12 and 13 (a CUmemLocation by value), and where the
// host's writes end (the end of weight loading) is the model's to say. The
// int32 scratch is device memory for that reason: as a managed page written
// by the host before every op that takes ids, positions or offsets, it was
// faulted back to the device each time (about 100 µs an op on an H200).
//
// Scratch held between calls: besides the int32 edges' buffer, Ops keeps
// the device scratch of the ops that need some — the chunked logprob's
// logits chunk and state, SumSquares' partial sums, the bf16 linear
// layers' widened or rounded operand, tc2's δ — one buffer per purpose,
// grown when a call needs more (scratch.go), so that no op allocates or
// frees device memory (cuMemFree synchronizes the device) per call. So
// after the ops have run, Device.Live counts the AllocF32/AllocBF16
// allocations not yet freed plus Backend.Scratch's buffers; Close frees
// both and leaves nothing allocated on the driver.
//
// Ops run one at a time (a mutex), as the device's default stream would
// run them anyway. The precision mode (kernels.Precision) is Ops': the
// products on frozen bfloat16 weights exact in f32, or bf16 operands with
// f32 accumulation, and then the training attention on bf16 tensor cores
// where its head dim allows (Ops.SetPrecision) and Matmul (the LoRA
// products) on TF32 tensor cores (Device.MatmulTF32; MatmulBatched stays
// cublasSgemmStridedBatched). NewBackend takes the device over:
// Close closes it.
type Backend struct {
	d    *Device
	ops  *Ops
	host ref.Backend // RowMax, ExpShift

	mu     sync.Mutex
	closed bool
	allocs []allocation // live allocations of AllocF32/AllocBF16, by address
	edges  *Buffer      // device scratch (cuMemAlloc) for the int32 edges of one call
	// edgeTaken: the op onDevice runs has taken the scratch (edge)
	edgeTaken bool
	prof      opProfile // per-op times while a profile runs (StartProfile)
	// label: what the op onDevice runs says of its kernels, for the
	// profile's name ("tc2": AttentionForward (tc2)); "" for most ops
	label string

	pinned map[unsafe.Pointer]int // live AllocHostF32 allocations: address → values (hostcopy.go)

	// streamOrdered: ops only queue their work (SetSyncEachOp(false),
	// stream.go); pending: an op was queued since the last synchronization
	streamOrdered, pending bool
	// ring: the stream-ordered mode's int32 edge buffers (stream.go), in
	// place of edges; edgeClock orders their use
	ring      []edgeSlot
	edgeClock uint64
	// skipSync makes the synchronizations of the stream-ordered mode
	// no-ops; set by tests only (export_stream_test.go), to show that a test
	// fails without them
	skipSync bool
}

// allocation is one AllocF32 or AllocBF16: buf holds bytes bytes the caller
// sees (and, for bfloat16, padding to whole float32 elements and beyond).
type allocation struct {
	buf   *Buffer
	bytes int
	bf16  bool
}

var (
	_ kernels.Backend   = (*Backend)(nil)
	_ kernels.Allocator = (*Backend)(nil)
)

// NewBackend returns the backend on device d computing in precision p. It
// loads the kernels (LoadOps). The backend owns d from then on: Close
// closes it. On error d is left open.
func NewBackend(d *Device, p kernels.Precision) (*Backend, error) {
	ops, err := d.LoadOps()
	if err != nil {
		return nil, fmt.Errorf("CUDA backend: %w", err)
	}
	if err := ops.SetPrecision(p); err != nil {
		return nil, errors.Join(fmt.Errorf("CUDA backend: %w", err), ops.Unload())
	}
	return &Backend{d: d, ops: ops}, nil
}

// OpenBackend opens the device o names (Open) and returns the backend on
// it (NewBackend), or closes the device again when the backend cannot be
// made. What the machine lacks comes back as Open's *MissingError.
func OpenBackend(o Options, p kernels.Precision) (*Backend, error) {
	d, err := Open(o)
	if err != nil {
		return nil, err
	}
	b, err := NewBackend(d, p)
	if err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return b, nil
}

// Name says the precision and the device: "cuda/f32 cuda:0 (NVIDIA H200, …)".
func (b *Backend) Name() string {
	return fmt.Sprintf("cuda/%s %s", b.ops.Precision(), b.d)
}

// SetAttentionKernel picks the bf16 precision's tensor-core attention
// (Ops.SetAttentionKernel: AttentionTC1, the default, AttentionTC2,
// AttentionTC3, AttentionTC3K64 or AttentionGEMM).
// Call it before the ops run.
func (b *Backend) SetAttentionKernel(name string) error { return b.ops.SetAttentionKernel(name) }

// SetGEMMLibrary picks the library of the bf16 precision's linear-layer
// GEMMs (Ops.SetGEMMLibrary: GEMMCublas, the default, or GEMMCublasLt,
// which needs cuBLASLt loaded, Options.BLASLt). Call it before the ops run.
func (b *Backend) SetGEMMLibrary(name string) error { return b.ops.SetGEMMLibrary(name) }

// SetGEMMAutotune sets how many cuBLASLt candidates are timed per new GEMM
// shape (Ops.SetGEMMAutotune; n ≤ 1: off).
func (b *Backend) SetGEMMAutotune(n int) { b.ops.SetGEMMAutotune(n) }

// GEMMLibrary is the library SetGEMMLibrary picked.
func (b *Backend) GEMMLibrary() string { return b.ops.GEMMLibrary() }

// AttentionKernel is the tensor-core attention SetAttentionKernel picked.
func (b *Backend) AttentionKernel() string { return b.ops.AttentionKernel() }

// Precision is the backend's compute precision (kernels.PrecisionOf).
func (b *Backend) Precision() kernels.Precision { return b.ops.Precision() }

// Scratch returns the device scratch the backend holds between calls —
// the int32 edges' buffer (buffers, stream-ordered: stream.go) and Ops'
// scratch slots (scratch.go) — in buffers and bytes. It is part of Device.Live; Close frees it. Everything else
// Device.Live counts is an AllocF32 or AllocBF16 allocation not yet freed.
func (b *Backend) Scratch() (buffers, bytes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	buffers, bytes = b.ops.ScratchLive()
	if b.edges != nil {
		buffers, bytes = buffers+1, bytes+4*b.edges.n
	}
	for _, sl := range b.ring {
		buffers, bytes = buffers+1, bytes+4*sl.buf.n
	}
	return buffers, bytes
}

// Device is the device the backend runs on.
func (b *Backend) Device() *Device { return b.d }

// Close frees what the backend still holds, unloads the kernels and closes
// the device. Allocations the caller did not free are freed and named in
// the error; slices of them must not be touched after (their memory is
// gone, and reading it faults). It is safe to call more than once.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	if b.pending { // the queued ops finish before their memory goes
		b.pending = false
		errs = append(errs, b.d.Synchronize())
	}
	if n := len(b.allocs); n > 0 {
		bytes := 0
		for _, a := range b.allocs {
			bytes += a.bytes
			errs = append(errs, a.buf.Free())
		}
		errs = append([]error{fmt.Errorf("CUDA backend closed with %d allocations (%d bytes) not freed", n, bytes)}, errs...)
		b.allocs = nil
	}
	if b.edges != nil {
		errs = append(errs, b.edges.Free())
		b.edges = nil
	}
	for _, sl := range b.ring {
		errs = append(errs, sl.buf.Free())
	}
	b.ring = nil
	errs = append(errs, b.freeHostAll())
	errs = append(errs, b.ops.Unload(), b.d.Close())
	return errors.Join(errs...)
}

// ---- memory ---------------------------------------------------------------

// AllocF32 returns n zeroed float32 values of managed memory.
func (b *Backend) AllocF32(n int) ([]float32, error) {
	p, err := b.alloc("AllocF32", n, 4*n, n, false)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []float32{}, nil
	}
	return unsafe.Slice((*float32)(p), n), nil
}

// AllocBF16 returns n zeroed bfloat16 values (bits) of managed memory.
func (b *Backend) AllocBF16(n int) ([]uint16, error) {
	// Whole float32 elements, and one more: a view at an odd offset is
	// passed to the kernels as (len+1)/2 elements from its address.
	p, err := b.alloc("AllocBF16", n, 2*n, n/2+2, true)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []uint16{}, nil
	}
	return unsafe.Slice((*uint16)(p), n), nil
}

// alloc allocates elems float32 elements for an allocation the caller sees
// as bytes bytes (n values), and records it.
func (b *Backend) alloc(op string, n, bytes, elems int, bf16 bool) (unsafe.Pointer, error) {
	if n < 0 {
		return nil, fmt.Errorf("CUDA backend %s: %d values", op, n)
	}
	if n == 0 {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("CUDA backend %s: %w", op, errClosed)
	}
	buf, err := b.d.AllocManaged(elems)
	if err != nil {
		return nil, fmt.Errorf("CUDA backend %s of %d values: %w", op, n, err)
	}
	i := sort.Search(len(b.allocs), func(i int) bool { return b.allocs[i].buf.ptr > buf.ptr })
	b.allocs = slices.Insert(b.allocs, i, allocation{buf: buf, bytes: bytes, bf16: bf16})
	return hostPtr(buf.ptr), nil
}

// FreeF32 releases a slice AllocF32 returned. A slice that is not one (a
// view, memory from elsewhere, one freed already) panics.
func (b *Backend) FreeF32(s []float32) {
	if len(s) > 0 {
		b.free("FreeF32", uintptr(unsafe.Pointer(&s[0])), 4*len(s), false)
	}
}

// FreeBF16 releases a slice AllocBF16 returned, as FreeF32.
func (b *Backend) FreeBF16(s []uint16) {
	if len(s) > 0 {
		b.free("FreeBF16", uintptr(unsafe.Pointer(&s[0])), 2*len(s), true)
	}
}

func (b *Backend) free(op string, addr uintptr, bytes int, bf16 bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		panic(fmt.Sprintf("kernels/cuda: %s after Close", op))
	}
	i := sort.Search(len(b.allocs), func(i int) bool { return uintptr(b.allocs[i].buf.ptr) >= addr })
	if i == len(b.allocs) || uintptr(b.allocs[i].buf.ptr) != addr || b.allocs[i].bytes != bytes || b.allocs[i].bf16 != bf16 {
		panic(fmt.Sprintf("kernels/cuda: %s of %d bytes at %#x: not a whole allocation of this backend's (a view, or freed already)", op, bytes, addr))
	}
	b.syncQueued(op) // queued ops may still use the memory
	if err := b.allocs[i].buf.Free(); err != nil {
		panic(fmt.Sprintf("kernels/cuda: %s: %v", op, err))
	}
	b.allocs = slices.Delete(b.allocs, i, i+1)
}

// find returns the allocation holding the bytes bytes at addr, or nil;
// b.mu is held.
func (b *Backend) find(addr uintptr, bytes int) *allocation {
	i := sort.Search(len(b.allocs), func(i int) bool { return uintptr(b.allocs[i].buf.ptr) > addr }) - 1
	if i < 0 {
		return nil
	}
	a := &b.allocs[i]
	if addr+uintptr(bytes) > uintptr(a.buf.ptr)+uintptr(a.bytes) {
		return nil
	}
	return a
}

// foreign panics for an argument that is not the backend's memory.
func foreign(op, name string, n int, addr uintptr) {
	panic(fmt.Sprintf("kernels.%s: %s (%d values at %#x) is not memory of the CUDA backend: allocate it with kernels.AllocF32 or AllocBF16", op, name, n, addr))
}

// f32 is the device buffer of s, a view of the allocation holding it (nil
// for an empty s); b.mu is held.
func (b *Backend) f32(op, name string, s []float32) *Buffer {
	if len(s) == 0 {
		return nil
	}
	addr := uintptr(unsafe.Pointer(&s[0]))
	a := b.find(addr, 4*len(s))
	if a == nil {
		foreign(op, name, len(s), addr)
	}
	return &Buffer{d: b.d, ptr: DevPtr(addr), n: len(s), base: a.buf}
}

// bf16 is f32 for bfloat16 values: (len+1)/2 float32 elements from s's
// address, as Ops takes a bfloat16 operand.
func (b *Backend) bf16(op, name string, s []uint16) *Buffer {
	if len(s) == 0 {
		return nil
	}
	addr := uintptr(unsafe.Pointer(&s[0]))
	a := b.find(addr, 2*len(s))
	if a == nil {
		foreign(op, name, len(s), addr)
	}
	return &Buffer{d: b.d, ptr: DevPtr(addr), n: (len(s) + 1) / 2, base: a.buf}
}

// edge copies the int32 values s into the backend's device scratch
// (scratch) with one synchronous cuMemcpyHtoD, and returns it as a buffer
// of len(s) elements (nil for an empty s); b.mu is held. The host never
// reads the scratch: its address is the device's only.
//
// In the stream-ordered mode the ops queued before may still read the
// scratch when the next op overwrites it. The copy is safe all the same:
// s is pageable (Go) memory, and for a transfer from pageable host memory
// to device memory the driver's documentation (CUDA Driver API, "API
// synchronization behavior", Memcpy) says that a stream sync is performed
// before the copy is initiated; the launches and the copy are all on the
// legacy default stream, so every queued kernel has finished before the
// scratch changes, and the op's own kernels, queued after the copy, read
// the new values. The price is that an op with an int32 edge still waits
// for the device before its copy, so the stream-ordered mode keeps a few
// edge buffers and copies only values that none of them holds already
// (streamEdge: the positions and sequence offsets, the same for every
// layer of a pass, cost one copy a pass); page-locked staging buffers with
// cuMemcpyHtoDAsync would not wait at all, and are not built.
func (b *Backend) edge(op string, s []int32) *Buffer {
	if len(s) == 0 {
		return nil
	}
	if b.streamOrdered {
		return b.streamEdge(op, s, len(s))
	}
	v := b.scratch(op, len(s))
	if err := v.UploadInt32(s); err != nil {
		panic(fmt.Sprintf("kernels.%s: int32 scratch: %v", op, err))
	}
	return v
}

// scratch returns n elements of the backend's device scratch for the int32
// edges (cuMemAlloc memory, grown when a call needs more) for the op
// onDevice runs; b.mu is held. The scratch is free to overwrite by
// cuMemcpyHtoD (edge says why in the stream-ordered mode too); growing it
// frees the old buffer after a synchronization. An op takes it at most
// once (a second edge would overwrite the first).
func (b *Backend) scratch(op string, n int) *Buffer {
	if b.streamOrdered {
		return b.streamEdge(op, nil, n)
	}
	if b.edgeTaken {
		panic(fmt.Sprintf("kernels.%s: a second int32 edge in one op", op))
	}
	b.edgeTaken = true
	if b.edges == nil || b.edges.n < n {
		if b.edges != nil {
			b.syncQueued(op) // queued ops may still read it
			if err := b.edges.Free(); err != nil {
				panic(fmt.Sprintf("kernels.%s: %v", op, err))
			}
			b.edges = nil
		}
		buf, err := b.d.Alloc(max(n, 4096))
		if err != nil {
			panic(fmt.Sprintf("kernels.%s: int32 scratch: %v", op, err))
		}
		b.edges = buf
	}
	return b.edges.view(0, n)
}

// ---- running ops ----------------------------------------------------------

// onDevice runs an op's launches (run, which makes its buffers with f32,
// bf16 and edge) and waits for the device to finish them — unless the
// backend is stream-ordered (SetSyncEachOp(false)) and no profile runs:
// then the launches stay queued. A failure panics naming the op:
// kernels.Backend's ops return no errors.
func (b *Backend) onDevice(op string, run func() error) {
	b.onDeviceCost(op, nil, run)
}

// onDeviceCost is onDevice for an op with products: cost, called only
// while a profile runs (before the op's clock starts), gives their FLOPs
// and the shape the profile splits the op's name by (opCost).
func (b *Backend) onDeviceCost(op string, cost func() opCost, run func() error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enter(op)
	var t0 time.Time
	var c opCost
	if b.prof != nil { // the cost, the clock and the label's name only while a profile runs
		if cost != nil {
			c = cost()
		}
		t0 = time.Now()
	}
	b.edgeTaken = false
	b.label = ""
	err := run()
	if err == nil && (!b.streamOrdered || b.prof != nil) { // a profile times whole ops
		err = b.d.Synchronize()
		b.pending = false
	} else if err == nil {
		b.pending = true
	}
	if err != nil {
		panic(fmt.Sprintf("kernels.%s: %v%s", op, err, b.earlierNote()))
	}
	if b.prof == nil {
		return
	}
	if c.shape != "" {
		op += " " + c.shape
	}
	if b.label != "" {
		op += " (" + b.label + ")"
	}
	b.prof.record(op, t0, c.flops)
}

// enter checks the backend is open; b.mu is held.
func (b *Backend) enter(op string) {
	if b.closed {
		panic(fmt.Sprintf("kernels.%s: the CUDA backend is closed", op))
	}
}
