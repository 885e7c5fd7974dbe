package cuda_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
)

// TestOpenNamesWhatIsMissing: Open through the real loader says which of
// driver library, cuBLAS library and device is missing, and opens the fake
// device when nothing is.
func TestOpenNamesWhatIsMissing(t *testing.T) {
	libs := fakeLibs(t)
	nowhere := filepath.Join(t.TempDir(), "absent.so")
	setDevices, _ := fakeHooks(t, libs.Driver)
	defer setDevices(-1)

	_, err := cuda.Open(cuda.Options{DriverLib: nowhere, BLASLib: libs.BLAS})
	asMissing(t, err, "CUDA driver library")
	_, err = cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: nowhere})
	asMissing(t, err, "cuBLAS library")

	setDevices(0)
	_, err = cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS})
	m := asMissing(t, err, "CUDA device")
	if want := "CUDA backend unavailable: no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start %q", err, want)
	}
	if m.Err == nil {
		t.Error("the driver's error is not kept")
	}
	setDevices(1)
	_, err = cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS, Ordinal: 1})
	asMissing(t, err, "CUDA device")
	if !strings.Contains(err.Error(), "device 1 asked for, the driver sees 1") {
		t.Errorf("message %q does not say which device", err)
	}

	dev, err := cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dev.String(), "cuda:0 (Fake CUDA Device 0, driver 13.0, cuBLAS "+libs.BLAS+")"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
