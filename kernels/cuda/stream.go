package cuda

import (
	"fmt"

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
//   - CopyToHost and SumSquares end in a cuMemcpyDtoH, which returns once
//     the copy has completed, after the work queued before it;
//   - RowMax and ExpShift, which read their rows on the host, wait first;
//   - FreeF32, FreeBF16, the growth of the int32 edges' scratch and of
//     Ops' scratch slots (scratch.go), and Close wait before freeing;
//   - an op with an int32 edge waits before its copy (edge says why);
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
