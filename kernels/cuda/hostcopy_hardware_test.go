package cuda_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestCopyToHostOnHardware times the two ways the host can get a decode
// step's logits, [32, 151936] float32 (19 MB) that a kernel just wrote to
// managed memory: a host read of the managed buffer (copy out of it: each
// page migrates on a fault) and CopyToHost (one cuMemcpyDtoH_v2), each
// followed by a device op on the buffer (Scale by 1, as the next step's
// lm_head: after the host read it faults the pages back, after the copy
// they never left). It logs the median and the best of each, checks both
// give the values the device wrote, and fails when the bulk copy is not
// the faster (it exists for that). With
// -test.short (under compute-sanitizer) it copies 4096 values once and
// times nothing.
func TestCopyToHostOnHardware(t *testing.T) {
	dev := openHardware(t)
	b, err := cuda.NewBackend(dev, kernels.PrecisionF32)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	n, rounds := 32*151936, 7
	if testing.Short() {
		n, rounds = 4096, 1
	}
	read, bulk := timeCopyToHost(t, b, n, rounds)
	if testing.Short() {
		return
	}
	mb := float64(4*n) / 1e6
	med := func(ts []time.Duration) time.Duration {
		ts = slices.Clone(ts)
		slices.Sort(ts)
		return ts[len(ts)/2]
	}
	best := func(ts []time.Duration) string {
		d := slices.Min(ts)
		return fmt.Sprintf("best %v (%.1f GB/s)", d, mb/1e3/d.Seconds())
	}
	t.Logf("COPYTOHOST %.1f MB, median of %d rounds: host read of managed memory %v (%s), the next device op %v; CopyToHost %v (%s), the next device op %v",
		mb, rounds, med(read[0]), best(read[0]), med(read[1]), med(bulk[0]), best(bulk[0]), med(bulk[1]))
	if med(bulk[0]) >= med(read[0]) {
		t.Errorf("CopyToHost (median %v) is not faster than a host read of the managed buffer (median %v)", med(bulk[0]), med(read[0]))
	}
}

// timeCopyToHost fills n values of b's memory on the device and, rounds
// times, reads them on the host in place and then with CopyToHost, each
// followed by a device op on the buffer, failing t unless both reads give
// the values. It returns the times of the host read and of the device op
// after it, and of the bulk copy and of the device op after it.
func timeCopyToHost(t *testing.T, b *cuda.Backend, n, rounds int) (read, bulk [2][]time.Duration) {
	t.Helper()
	src, err := b.AllocF32(n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(src)
	for i := range src {
		src[i] = float32(i%1999) - 999
	}
	b.Scale(src, src, 2, n) // the values the device wrote
	want := make([]float32, n)
	for i := range want {
		want[i] = 2 * (float32(i%1999) - 999)
	}
	hostRead, hostBulk := make([]float32, n), make([]float32, n)
	timed := func(ts *[]time.Duration, f func()) {
		t0 := time.Now()
		f()
		*ts = append(*ts, time.Since(t0))
	}
	b.Scale(src, src, 1, n) // pages on the device
	for range rounds {
		clear(hostRead) // the host's pages of dst are touched before the clock runs
		clear(hostBulk)
		timed(&read[0], func() { copy(hostRead, src) })
		timed(&read[1], func() { b.Scale(src, src, 1, n) })
		timed(&bulk[0], func() { b.CopyToHost(hostBulk, src, n) })
		timed(&bulk[1], func() { b.Scale(src, src, 1, n) })
		if !slices.Equal(hostRead, want) {
			t.Fatal("the host read of the managed buffer differs from the values the device wrote")
		}
		if !slices.Equal(hostBulk, want) {
			t.Fatal("CopyToHost differs from the values the device wrote")
		}
	}
	return read, bulk
}
