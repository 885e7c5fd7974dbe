package cuda

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// scratchStore is Ops' device scratch kept between calls: one cuMemAlloc
// buffer per purpose (a slot: "logprob.z", "sumsquares", "attention.delta",
// …), grown when a call needs more and otherwise reused, so that an op's
// intermediate values cost no cuMemAlloc and no cuMemFree (which
// synchronizes the device) per call. Ops.Unload frees it; until then its
// buffers count in Device.Live.
//
// An op holds the whole store from lockScratch to unlock: two goroutines
// calling Ops at once take turns for the ops that use scratch (the
// kernels of one op may still be running when the next op's are queued,
// but both are on the default stream, which runs them in order, so the
// next op's writes to the scratch come after the previous op's reads).
type scratchStore struct {
	mu   sync.Mutex
	bufs map[string]*Buffer
	// tables is, per slot, the int32 table last uploaded by table and the
	// slot's buffer then: the copy is skipped while both still match.
	tables map[string]uploadedTable
}

// uploadedTable is an int32 table a slot's buffer in holds (scratchLease.table).
type uploadedTable struct {
	vals []int32
	in   *Buffer
}

// scratchLease is the store held by one op: get hands out slots, unlock
// releases the store.
type scratchLease struct {
	s *scratchStore
	d *Device
}

// lockScratch takes o's scratch store for one op; the caller unlocks it
// when the op's launches are queued (or it failed).
func (o *Ops) lockScratch() *scratchLease {
	o.store.mu.Lock()
	return &scratchLease{s: &o.store, d: o.d}
}

func (l *scratchLease) unlock() { l.s.mu.Unlock() }

// table returns the slot's buffer holding vals (int32 values, as get's
// n elements), copying them to the device only when the slot does not
// already hold them: a table that repeats from op to op (the same
// sequence offsets in every layer, an adapter's segments every step)
// crosses once. The copy waits for the work queued before it (a copy from
// pageable memory), so kernels still reading the old table finish first.
func (l *scratchLease) table(op, slot string, vals []int32) (*Buffer, error) {
	b, err := l.get(op, slot, len(vals))
	if err != nil {
		return nil, err
	}
	in := l.s.bufs[slot]
	if t, ok := l.s.tables[slot]; ok && t.in == in && slices.Equal(t.vals, vals) {
		return b, nil
	}
	delete(l.s.tables, slot) // unknown until the copy succeeds
	if err := b.UploadInt32(vals); err != nil {
		return nil, fmt.Errorf("CUDA %s: scratch %s: %w", op, slot, err)
	}
	if l.s.tables == nil {
		l.s.tables = map[string]uploadedTable{}
	}
	l.s.tables[slot] = uploadedTable{slices.Clone(vals), in}
	return b, nil
}

// get returns n float32 elements (at least one) of the slot's buffer,
// a view at its start (16-byte aligned, as cuMemAlloc memory is). The
// buffer is reallocated only when it holds fewer than n: freed once the
// device has finished what was queued (Device.Synchronize), then allocated
// anew at n. Its contents are undefined. Slots of one op are
// distinct buffers; a slot's view is valid until the next get of that slot.
func (l *scratchLease) get(op, slot string, n int) (*Buffer, error) {
	n = max(n, 1)
	b := l.s.bufs[slot]
	if b == nil || b.n < n {
		if b != nil {
			// Kernels of earlier ops may still be queued on the buffer
			// (Backend's stream-ordered mode): they finish first.
			if err := l.d.Synchronize(); err != nil {
				return nil, fmt.Errorf("CUDA %s: scratch %s: %w", op, slot, err)
			}
			delete(l.s.bufs, slot)
			if err := b.Free(); err != nil {
				return nil, fmt.Errorf("CUDA %s: scratch %s: %w", op, slot, err)
			}
		}
		nb, err := l.d.Alloc(n)
		if err != nil {
			return nil, fmt.Errorf("CUDA %s: scratch %s: %w", op, slot, err)
		}
		if l.s.bufs == nil {
			l.s.bufs = map[string]*Buffer{}
		}
		l.s.bufs[slot] = nb
		b = nb
	}
	return b.view(0, n), nil
}

// freeScratch frees every scratch buffer; the first errors are joined.
func (o *Ops) freeScratch() error {
	o.store.mu.Lock()
	defer o.store.mu.Unlock()
	var errs []error
	for slot, b := range o.store.bufs {
		if err := b.Free(); err != nil {
			errs = append(errs, fmt.Errorf("CUDA Ops: scratch %s: %w", slot, err))
		}
	}
	clear(o.store.bufs)
	clear(o.store.tables)
	return errors.Join(errs...)
}

// ScratchLive returns the number of scratch buffers Ops holds between
// calls and their bytes: part of Device.Live until Unload frees them.
func (o *Ops) ScratchLive() (buffers, bytes int) {
	o.store.mu.Lock()
	defer o.store.mu.Unlock()
	for _, b := range o.store.bufs {
		bytes += 4 * b.n
	}
	return len(o.store.bufs), bytes
}
