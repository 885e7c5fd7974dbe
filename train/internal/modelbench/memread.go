package main

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hone-rl/hone/train/model"
)

// Decode at small batch is bound by memory bandwidth: each step reads every
// weight once. On a shared virtual machine that bandwidth moves from minute
// to minute, so a decode figure alone cannot say whether a slow run was the
// code or the host. The decode worker therefore also times plain reads of
// the same weight bytes, taking turns with decode steps, and reports the
// tokens/s such a read allows and the step's time over the read's.

// weightBytes returns the memory a decode step streams: every tensor's
// float32 values or bfloat16 bits, as bytes.
func weightBytes(m *model.Model) [][]byte {
	var bufs [][]byte
	for _, t := range m.Tensors() {
		if len(t.Values) > 0 {
			bufs = append(bufs, unsafe.Slice((*byte)(unsafe.Pointer(&t.Values[0])), 4*len(t.Values)))
		}
		if len(t.Bits) > 0 {
			bufs = append(bufs, unsafe.Slice((*byte)(unsafe.Pointer(&t.Bits[0])), 2*len(t.Bits)))
		}
	}
	return bufs
}

// plainRead reads the 8-byte words of every buffer once (a tail of under 8
// bytes is skipped) on workers goroutines, split the way the engine splits a
// matrix among its kernel workers: each reads its contiguous share of one
// buffer, then of the next. It returns the time taken and a checksum of the
// words (which keeps the reads from being optimised away).
func plainRead(bufs [][]byte, workers int) (time.Duration, uint64) {
	workers = max(1, workers)
	var wg sync.WaitGroup
	var sum atomic.Uint64
	t0 := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s uint64
			for _, b := range bufs {
				n := len(b) / 8
				lo, hi := w*n/workers, (w+1)*n/workers
				if hi > lo {
					s += sumWords(b[8*lo : 8*hi])
				}
			}
			sum.Add(s)
		}()
	}
	wg.Wait()
	return time.Since(t0), sum.Load()
}

// memorySpeed is what the decode worker measured against plain reads.
type memorySpeed struct {
	ReadTokensPerS float64 // batch / the median read time
	StepOverRead   float64 // median over rounds of step time / read time
}

// pairedRounds runs rounds of (plain read of bufs, then step) and returns
// their medians; batch is the tokens one step decodes.
func pairedRounds(bufs [][]byte, workers, batch, rounds int, step func() error) (memorySpeed, error) {
	var reads, ratios []float64
	for range rounds {
		r, _ := plainRead(bufs, workers)
		t0 := time.Now()
		if err := step(); err != nil {
			return memorySpeed{}, err
		}
		s := time.Since(t0)
		reads = append(reads, r.Seconds())
		ratios = append(ratios, s.Seconds()/r.Seconds())
	}
	if len(reads) == 0 {
		return memorySpeed{}, nil
	}
	return memorySpeed{ReadTokensPerS: float64(batch) / median(reads), StepOverRead: median(ratios)}, nil
}

// median of v (the mean of the middle two for an even count); v is sorted
// in place.
func median(v []float64) float64 {
	sort.Float64s(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return m
}
