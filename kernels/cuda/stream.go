package cuda

import (
	"fmt"
	"slices"

	"github.com/hone-rl/hone/kernels"
)

var _ kernels.Synchronizer = (*Backend)(nil)

// SetSyncEachOp picks how the backend waits for the device. On (the
// default), every op ends with cuCtxSynchronize: the host may read any
// result at once, and a failure on the device panics in the op that
// caused it. Off (stream-ordered), an op only queues its launches and
// GEMMs on the default stream and returns; the backend waits only where
// the host needs the device's results or where memory would be reused
// under a queued kernel:
//
//   - CopyToHost, SumSquares, SumSquaresMany and SumSquaresSegments (one
//     copy for all their tensors) and ChooseRows end in a cuMemcpyDtoH, which returns once
//     the copy has completed, after the work queued before it (ChooseRows'
//     upload of its inputs, from pageable memory, waits for it already, as
//     SumSquaresSegments' upload of its segment table does when the table
//     changes);
//   - RowMax and ExpShift, which read their rows on the host, wait first;
//   - FreeF32, FreeBF16, the growth of the int32 edges' scratch and of
//     Ops' scratch slots (scratch.go), and Close wait before freeing;
//   - an op whose int32 edge none of the mode's four edge buffers holds
//     waits before its copy (edge says why; streamEdge);
//   - Synchronize waits: the caller's, before the host reads or writes
//     managed memory the queued ops use (train/model's Forward and
//     Backward end with it: kernels.Synchronize).
//
// A failure of a queued kernel comes back at the next of those waits, in
// whichever op or call that is: its panic says the failing op may be an
// earlier one. A running profile (StartProfile) synchronizes every op in
// either mode, since its times need it. The stream-ordered mode has run
// only on the emulated device of kernels/cuda/cudafake (in its deferred
// mode, where the queued work runs only at the synchronization points the
// driver documents), not yet on a GPU. Call it before the ops run, or
// between them: turning it on waits for what is queued.
func (b *Backend) SetSyncEachOp(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enter("SetSyncEachOp")
	if on {
		b.syncQueued("SetSyncEachOp")
	}
	b.streamOrdered = !on
}

// SyncEachOp reports whether every op ends synchronized (SetSyncEachOp).
func (b *Backend) SyncEachOp() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.streamOrdered
}

// Synchronize implements kernels.Synchronizer: it returns once the device
// has finished every op queued before it (a no-op when each op ends
// synchronized, or nothing was queued since the last wait). A failure of
// one of those ops panics here, naming Synchronize: the op that failed is
// one of those queued since the last synchronization.
func (b *Backend) Synchronize() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enter("Synchronize")
	b.syncQueued("Synchronize")
}

// syncHost is Synchronize for the host's row ops (RowMax, ExpShift), named
// after the op.
func (b *Backend) syncHost(op string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enter(op)
	b.syncQueued(op)
}

// syncQueued waits for the ops queued since the last synchronization, when
// there are some; b.mu is held. A failure panics naming op.
func (b *Backend) syncQueued(op string) {
	if !b.pending || b.skipSync {
		return
	}
	b.pending = false
	if err := b.d.Synchronize(); err != nil {
		panic(fmt.Sprintf("kernels.%s: %v%s", op, err, b.earlierNote()))
	}
}

// earlierNote is what a failure's panic adds in the stream-ordered mode;
// b.mu is held.
func (b *Backend) earlierNote() string {
	if !b.streamOrdered {
		return ""
	}
	return " (the CUDA backend is stream-ordered, SetSyncEachOp(false): the op that failed on the device may be an earlier one, queued since the last synchronization)"
}

// edgeSlots is how many int32 edge buffers the stream-ordered mode keeps.
const edgeSlots = 4

// edgeSlot is one of them: its buffer (cuMemAlloc memory), the values it
// holds (nil when unknown: Ops wrote it, or a copy failed), and when an op
// last took it (Backend.edgeClock).
type edgeSlot struct {
	buf  *Buffer
	vals []int32
	used uint64
}

// streamEdge is edge (s, n = len(s)) and scratch (s nil, n elements Ops
// fills) in the stream-ordered mode; b.mu is held. The kernels only read
// the int32 edges (const int * throughout the .cu files), so a buffer that
// holds s already is handed out again without a copy, and without the wait
// a cuMemcpyHtoD makes; otherwise the least recently taken buffer (or a
// new one, up to edgeSlots) is overwritten by the copy, which waits for
// the queued kernels first (edge), or, when too small, freed after a
// synchronization and allocated anew.
func (b *Backend) streamEdge(op string, s []int32, n int) *Buffer {
	if b.edgeTaken {
		panic(fmt.Sprintf("kernels.%s: a second int32 edge in one op", op))
	}
	b.edgeTaken = true
	b.edgeClock++
	if s != nil {
		for i := range b.ring {
			if sl := &b.ring[i]; sl.vals != nil && slices.Equal(sl.vals, s) {
				sl.used = b.edgeClock
				return sl.buf.view(0, n)
			}
		}
	}
	sl := b.edgeVictim(op, n)
	sl.used, sl.vals = b.edgeClock, nil
	v := sl.buf.view(0, n)
	if s != nil {
		if err := v.UploadInt32(s); err != nil {
			panic(fmt.Sprintf("kernels.%s: int32 scratch: %v%s", op, err, b.earlierNote()))
		}
		sl.vals = slices.Clone(s)
	}
	return v
}

// edgeVictim returns the edge buffer streamEdge overwrites, of at least n
// elements; b.mu is held.
func (b *Backend) edgeVictim(op string, n int) *edgeSlot {
	if len(b.ring) < edgeSlots {
		buf, err := b.d.Alloc(max(n, 4096))
		if err != nil {
			panic(fmt.Sprintf("kernels.%s: int32 scratch: %v", op, err))
		}
		b.ring = append(b.ring, edgeSlot{buf: buf})
		return &b.ring[len(b.ring)-1]
	}
	i := 0
	for j := range b.ring {
		if b.ring[j].used < b.ring[i].used {
			i = j
		}
	}
	if b.ring[i].buf.n < n {
		b.syncQueued(op) // queued kernels may still read it
		if err := b.ring[i].buf.Free(); err != nil {
			panic(fmt.Sprintf("kernels.%s: %v", op, err))
		}
		b.ring = slices.Delete(b.ring, i, i+1)
		return b.edgeVictim(op, n)
	}
	return &b.ring[i]
}
