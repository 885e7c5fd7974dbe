package cuda_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
)

// TestOpenSonamesFollowDriver: without explicit paths, Open tries only the
// cuBLAS sonames of CUDA majors the driver runs, and cuBLASLt of cuBLAS's
// own major. The fake libraries stand under the sonames of CUDA 13 and 12
// in a folder of their own, found through LD_LIBRARY_PATH (read when a
// process starts: the test runs itself as a child). cuBLAS 13 beside a
// CUDA 12 driver loads and then fails in cublasCreate; Open took it, the
// first soname it tried, where libcublas.so.12 would have run.
func TestOpenSonamesFollowDriver(t *testing.T) {
	if lib := os.Getenv("HONE_SONAME_CHILD_DRIVER"); lib != "" {
		d, err := cuda.Open(cuda.Options{DriverLib: lib, BLASLt: true})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		os.Stdout.WriteString("device: " + d.String() + "\n")
		return
	}
	libs := fakeLibs(t)
	dir := t.TempDir()
	for _, major := range []string{"13", "12"} {
		for src, name := range map[string]string{libs.BLAS: "libcublas.so.", libs.BLASLt: "libcublasLt.so."} {
			// A copy, not a link: each soname is a library of its own.
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+major), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct{ version, blas, lt string }{
		{"13000", "libcublas.so.13", "libcublasLt.so.13"},
		{"12040", "libcublas.so.12", "libcublasLt.so.12"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenSonamesFollowDriver$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HONE_SONAME_CHILD_DRIVER="+libs.Driver, "HONE_FAKE_CUDA_VERSION="+c.version,
			"LD_LIBRARY_PATH="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("driver %s: %v\n%s", c.version, err, out)
		}
		want := "cuBLAS " + c.blas + ", cuBLASLt " + c.lt
		if !strings.Contains(string(out), want) {
			t.Errorf("driver %s: child said %q, want %q", c.version, out, want)
		}
	}
}
