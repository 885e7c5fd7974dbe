package cuda_test

import (
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestCopyToHostOnHardware times the ways the host can get a decode
// step's logits, [32, 151936] float32 (19 MB) that a kernel just wrote to
// managed memory: a host read of the managed buffer (copy out of it: each
// page migrates on a fault), CopyToHost into Go memory (one
// cuMemcpyDtoH_v2 through the driver's staging buffers) and CopyToHost
// into page-locked memory (AllocHostF32: by DMA; what train/model's Step
// does), each followed by a device op on the buffer (Scale by 1, as the
// next step's lm_head: after the host read it faults the pages back, after
// a copy they never left). It logs the median and the best of each, checks
// each gives the values the device wrote, and fails when the copy into
// page-locked memory is not faster than the host read (it exists for
// that). With -test.short (under compute-sanitizer) it copies 4096 values
// once and times nothing.
func TestCopyToHostOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionF32)
	n, rounds := 32*151936, 7
	if testing.Short() {
		n, rounds = 4096, 1
	}
	ts := timeCopyToHost(t, b, n, rounds)
	if testing.Short() {
		return
	}
	mb := float64(4*n) / 1e6
	for i, name := range []string{"host read of managed memory", "CopyToHost into Go memory", "CopyToHost into page-locked memory"} {
		best := slices.Min(ts[i][0])
		t.Logf("COPYTOHOST %.1f MB, %-34s median %9v, best %9v (%5.1f GB/s); the next device op median %9v (%d rounds)",
			mb, name, median(ts[i][0]), best, mb/1e3/best.Seconds(), median(ts[i][1]), rounds)
	}
	if median(ts[2][0]) >= median(ts[0][0]) {
		t.Errorf("CopyToHost into page-locked memory (median %v) is not faster than a host read of the managed buffer (median %v)", median(ts[2][0]), median(ts[0][0]))
	}
}

// timeCopyToHost fills n values of b's memory on the device and, rounds
// times, brings them to the host three ways — a host read in place,
// CopyToHost into Go memory, CopyToHost into AllocHostF32's memory — each
// followed by a device op on the buffer, failing t unless each gives the
// values. ts[way] holds the times of the way and of the device op after it.
func timeCopyToHost(t *testing.T, b *cuda.Backend, n, rounds int) (ts [3][2][]time.Duration) {
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
	pinned, err := b.AllocHostF32(n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeHostF32(pinned)
	dst := [3][]float32{make([]float32, n), make([]float32, n), pinned}
	ways := [3]func(){
		func() { copy(dst[0], src) },
		func() { b.CopyToHost(dst[1], src, n) },
		func() { b.CopyToHost(dst[2], src, n) },
	}
	b.Scale(src, src, 1, n) // pages on the device
	for range rounds {
		for w, way := range ways {
			clear(dst[w]) // the host's pages of dst are touched before the clock runs
			t0 := time.Now()
			way()
			ts[w][0] = append(ts[w][0], time.Since(t0))
			t0 = time.Now()
			b.Scale(src, src, 1, n)
			ts[w][1] = append(ts[w][1], time.Since(t0))
			if !slices.Equal(dst[w], want) {
				t.Fatalf("way %d of bringing the values to the host gave other values than the device wrote", w)
			}
		}
	}
	return ts
}

// TestUploadBF16OnHardware times the two ways bfloat16 weights reach the
// device's managed memory, which its allocation touched on the device: host
// writes in place (copy: each page migrates to the host on a fault) and
// UploadBF16 (one cuMemcpyHtoD_v2, what model.LoadWeights and modelbench's
// fill do), each followed by a device op over the buffer (Scale by 1 of its
// float32 view: after the host writes it faults the pages back). It logs
// the median of each (log UPLOAD) and checks the values either way. With
// -test.short it uploads 4096 values once and times nothing. Not run on a
// GPU yet.
func TestUploadBF16OnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionF32)
	n, rounds := 1<<29, 5 // 1 GB
	if testing.Short() {
		n, rounds = 4096, 1
	}
	dst, err := b.AllocBF16(n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeBF16(dst)
	view := unsafe.Slice((*float32)(unsafe.Pointer(&dst[0])), n/2)
	src := make([]uint16, n)
	for i := range src {
		src[i] = kernels.BF16(float32(i%1999-999) * 1e-3) // finite float32 pairs, so Scale keeps them finite
	}
	var ts [2][2][]time.Duration
	for range rounds {
		for way, put := range []func(){func() { copy(dst, src) }, func() { b.UploadBF16(dst, src) }} {
			b.Scale(view, view, 1, len(view)) // the pages on the device
			b.Synchronize()
			t0 := time.Now()
			put()
			b.Synchronize()
			t1 := time.Now()
			b.Scale(view, view, 1, len(view))
			b.Synchronize()
			ts[way][0] = append(ts[way][0], t1.Sub(t0))
			ts[way][1] = append(ts[way][1], time.Since(t1))
			if !slices.Equal(dst, src) {
				t.Fatalf("%s: the device's memory does not hold the values", []string{"host writes", "UploadBF16"}[way])
			}
		}
	}
	if testing.Short() {
		return
	}
	for way, name := range []string{"host writes of managed memory", "UploadBF16"} {
		t.Logf("UPLOAD %d MB, %-30s median %9v (%5.1f GB/s); the next device op median %9v (%d rounds)",
			2*n>>20, name, median(ts[way][0]), float64(2*n)/1e9/median(ts[way][0]).Seconds(), median(ts[way][1]), rounds)
	}
}
