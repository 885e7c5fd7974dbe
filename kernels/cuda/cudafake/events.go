package cudafake

import (
	"fmt"

	"github.com/hone-rl/hone/kernels/cuda"
)

// Events keep time on a virtual clock of the emulated stream, so that
// what times work with them (the cuBLASLt autotune, gemmlt.go) sees
// deterministic figures: the clock starts at 0 and advances only when work
// that costs time runs on the stream — a BLASLt product by its algorithm's
// cost (BLASLt.SetAlgos), nothing else. cuEventRecord takes the clock's
// reading when it runs on the stream: at the call, or, in the deferred
// mode, when a synchronization point runs the queue up to it. So an event
// recorded after queued products reads the clock after them, and
// cuEventElapsedTime of an event not yet run fails with
// CUDA_ERROR_NOT_READY, as on a GPU.

// event is one cuEventCreate's state.
type event struct {
	recorded bool    // cuEventRecord was called
	done     bool    // its record ran on the stream
	at       float64 // the clock when it ran, in milliseconds
}

const errNotReady = cuda.CUDAErrorNotReady

// Clock returns the emulated stream's clock in milliseconds: the cost of
// the timed work that has run so far.
func (d *Driver) Clock() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.clock
}

// Events returns the number of events created and not destroyed.
func (d *Driver) Events() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.events)
}

// advance puts ms of work on the stream: the clock moves when it runs;
// d.mu is held.
func (d *Driver) advance(call string, ms float64) error {
	return d.submit(call, func() error { d.clock += ms; return nil })
}

func (d *Driver) EventCreate() (cuda.Event, error) {
	defer d.mu.Unlock()
	if err := d.enter("cuEventCreate", true); err != nil {
		return 0, err
	}
	if d.events == nil {
		d.events = map[cuda.Event]*event{}
	}
	d.nextEvent++
	e := cuda.Event(0x5000 + d.nextEvent)
	d.events[e] = &event{}
	return e, nil
}

func (d *Driver) EventRecord(e cuda.Event) error {
	defer d.mu.Unlock()
	if err := d.enter("cuEventRecord", true); err != nil {
		return err
	}
	ev := d.events[e]
	if ev == nil {
		return fail("cuEventRecord", errInvalidHandle, fmt.Sprintf("unknown event %#x", uint64(e)))
	}
	// A record replaces the last one: the event is pending until this one runs.
	*ev = event{recorded: true}
	return d.submit("cuEventRecord", func() error {
		ev.done, ev.at = true, d.clock
		return nil
	})
}

// EventSynchronize runs the queued work up to the event's record (none in
// the immediate mode), and no further: work queued after the event stays
// queued, as on a GPU it may still be running.
func (d *Driver) EventSynchronize(e cuda.Event) error {
	defer d.mu.Unlock()
	if err := d.enter("cuEventSynchronize", true); err != nil {
		return err
	}
	ev := d.events[e]
	if ev == nil {
		return fail("cuEventSynchronize", errInvalidHandle, fmt.Sprintf("unknown event %#x", uint64(e)))
	}
	for ev.recorded && !ev.done && len(d.queue) > 0 {
		w := d.queue[0]
		d.queue = d.queue[1:]
		if err := w.run(); err != nil {
			d.queue = nil // what was queued after a failure is dropped (flush)
			return err
		}
	}
	return nil
}

func (d *Driver) EventElapsedTime(start, end cuda.Event) (float32, error) {
	const call = "cuEventElapsedTime"
	defer d.mu.Unlock()
	if err := d.enter(call, true); err != nil {
		return 0, err
	}
	s, e := d.events[start], d.events[end]
	switch {
	case s == nil || e == nil:
		return 0, fail(call, errInvalidHandle, "unknown event")
	case !s.recorded || !e.recorded:
		return 0, fail(call, errInvalidHandle, "an event was never recorded")
	case !s.done || !e.done:
		return 0, fail(call, errNotReady, "an event has not completed (no synchronization ran its record)")
	}
	return float32(e.at - s.at), nil
}

func (d *Driver) EventDestroy(e cuda.Event) error {
	defer d.mu.Unlock()
	if err := d.enter("cuEventDestroy_v2", true); err != nil {
		return err
	}
	if d.events[e] == nil {
		return fail("cuEventDestroy_v2", errInvalidHandle, fmt.Sprintf("unknown event %#x", uint64(e)))
	}
	delete(d.events, e)
	return nil
}
