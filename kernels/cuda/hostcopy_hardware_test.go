package cuda_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestCopyToHostOnHardware times the two ways the host can get a decode
// step's logits, [32, 151936] float32 (19 MB) that a kernel just wrote to
// managed memory: a host read of the managed buffer (copy out of it: each
// page migrates on a fault) and CopyToHost (one cuMemcpyDtoH_v2). Each
// round first rewrites the buffer on the device (Scale by 1), so that its
// pages are there again, as after a step's lm_head. It logs the best and
// the median of each, checks both give the values the device wrote, and
// fails when the bulk copy is not the faster (it exists for that). With
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
	read, bulk := make([]float32, n), make([]float32, n)
	var tRead, tBulk []time.Duration
	for range rounds {
		clear(read)
		b.Scale(src, src, 1, n)
		t0 := time.Now()
		copy(read, src)
		tRead = append(tRead, time.Since(t0))
		clear(bulk)
		b.Scale(src, src, 1, n)
		t0 = time.Now()
		b.CopyToHost(bulk, src, n)
		tBulk = append(tBulk, time.Since(t0))
		if !slices.Equal(read, want) {
			t.Fatal("the host read of the managed buffer differs from the values the device wrote")
		}
		if !slices.Equal(bulk, want) {
			t.Fatal("CopyToHost differs from the values the device wrote")
		}
	}
	if testing.Short() {
		return
	}
	slices.Sort(tRead)
	slices.Sort(tBulk)
	mb := float64(4*n) / 1e6
	rate := func(d time.Duration) float64 { return mb / 1e3 / d.Seconds() }
	t.Logf("COPYTOHOST %.1f MB: host read of managed memory best %v (%.1f GB/s), median %v; CopyToHost best %v (%.1f GB/s), median %v; %d rounds",
		mb, tRead[0], rate(tRead[0]), tRead[rounds/2], tBulk[0], rate(tBulk[0]), tBulk[rounds/2], rounds)
	if tBulk[rounds/2] >= tRead[rounds/2] {
		t.Errorf("CopyToHost (median %v) is not faster than a host read of the managed buffer (median %v)", tBulk[rounds/2], tRead[rounds/2])
	}
}
