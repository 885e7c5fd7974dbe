package cuda_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/cuda/internal/ptxbuild"
)

// TestEmbeddedPTX: every .cu beside the package has its PTX embedded for
// every architecture, for that architecture's target, defining exactly the
// kernels the source defines; no PTX is left of a source that is gone.
func TestEmbeddedPTX(t *testing.T) {
	if got := cuda.PTXArches(); !slices.Equal(got, ptxbuild.Arches()) {
		t.Fatalf("cuda.PTXArches() = %v, ptxbuild.Arches() = %v", got, ptxbuild.Arches())
	}
	mods, err := ptxbuild.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("ptx/*.ptx")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(mods)*len(ptxbuild.Arches()) {
		t.Errorf("ptx/ holds %v, want the PTX of %v for compute %v (make ptx)", files, mods, ptxbuild.Arches())
	}
	for _, m := range mods {
		src, err := os.ReadFile(m + ".cu")
		if err != nil {
			t.Fatal(err)
		}
		kernels := ptxbuild.Kernels(src)
		if len(kernels) == 0 {
			t.Errorf("%s.cu defines no extern \"C\" __global__ kernel", m)
		}
		for _, a := range ptxbuild.Arches() {
			ptx, err := cuda.PTX(m, a)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ptxbuild.Target(ptx), fmt.Sprintf("sm_%d", a); got != want {
				t.Errorf("%s: .target %q, want %q", ptxbuild.FileName(m, a), got, want)
			}
			if got := ptxbuild.Entries(ptx); !slices.Equal(got, kernels) {
				t.Errorf("%s defines kernels %v, %s.cu %v (make ptx)", ptxbuild.FileName(m, a), got, m, kernels)
			}
		}
	}
	if _, err := cuda.PTX("nope", 90); err == nil {
		t.Error("PTX of a module that does not exist: no error")
	}
}

// TestLoadKernelsEmbeddedPTX: LoadKernels hands the driver the embedded
// PTX (with its NUL byte) of the newest architecture the device's compute
// capability runs, and the kernels that PTX defines can be looked up and
// launched; a device older than compute 8.0 is refused.
func TestLoadKernelsEmbeddedPTX(t *testing.T) {
	for _, c := range []struct{ major, minor, arch int }{{9, 0, 90}, {8, 0, 80}, {8, 6, 80}, {8, 9, 80}, {10, 0, 90}, {12, 0, 90}} {
		t.Run(fmt.Sprintf("sm_%d%d", c.major, c.minor), func(t *testing.T) {
			drv := cudafake.NewDriver(1, 0) // knows no kernel but those of the PTX loaded
			drv.SetComputeCapability(c.major, c.minor)
			dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			mod, err := dev.LoadKernels("rmsnorm")
			if err != nil {
				t.Fatal(err)
			}
			want, err := cuda.PTX("rmsnorm", c.arch)
			if err != nil {
				t.Fatal(err)
			}
			if imgs := drv.Images(); len(imgs) != 1 || !bytes.Equal(imgs[0], append(want, 0)) {
				t.Fatalf("the driver got %d images, want the embedded compute_%d PTX", len(imgs), c.arch)
			}
			k, err := mod.Kernel("rmsnorm_forward")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mod.Kernel("rmsnorm_sideways"); err == nil {
				t.Error("a kernel the PTX does not define was found")
			}
			out, err := dev.Alloc(6)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Free()
			if err := k.Launch(cuda.Dim3{X: 2, Y: 1, Z: 1}, cuda.Dim3{X: 64, Y: 1, Z: 1}, 0, out, out, out, out, 3, float32(1e-6)); err != nil {
				t.Fatal(err)
			}
			if l := drv.Launches(); len(l) != 1 || l[0].Kernel != "rmsnorm_forward" || l[0].Params != 6 {
				t.Errorf("launches %+v", l)
			}
		})
	}
	drv := cudafake.NewDriver(1, 0)
	drv.SetComputeCapability(7, 5)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if _, err := dev.LoadKernels("rmsnorm"); err == nil || !strings.Contains(err.Error(), "compute capability 7.5: the kernels are built for compute_80 and newer") {
		t.Errorf("sm_75: %v", err)
	}
	if n := len(drv.Images()); n != 0 {
		t.Errorf("sm_75: %d images loaded", n)
	}
}

// toolkit finds nvcc and ptxas ($HONE_NVCC and $HONE_NVCC_CCBIN name nvcc
// and its host compiler when set): without them the test is skipped, unless CI
// is set (.ci/run installs Debian's nvidia-cuda-toolkit).
func toolkit(t *testing.T) ptxbuild.Toolkit {
	t.Helper()
	tk, err := ptxbuild.FindToolkit(os.Getenv("HONE_NVCC"), os.Getenv("HONE_NVCC_CCBIN"))
	if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestPTXCurrent compiles every .cu again with nvcc and checks the
// embedded PTX is what it gives today (else: make ptx), then assembles it
// with ptxas for the architecture's own sm (sm_80, sm_90): ptxas must
// accept it, report every kernel of the source, and see no register spill
// in any function. The modules are compiled in parallel (-test.parallel
// at a time): nvcc and ptxas run one thread each, and this test is the
// longest of the package's.
func TestPTXCurrent(t *testing.T) {
	tk := toolkit(t)
	t.Parallel()
	mods, err := ptxbuild.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			checkModulePTX(t, tk, m)
		})
	}
}

// checkModulePTX is TestPTXCurrent for one module, both architectures.
func checkModulePTX(t *testing.T, tk ptxbuild.Toolkit, m string) {
	ctx := context.Background()
	src, err := os.ReadFile(m + ".cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ptxbuild.Arches() {
		name := ptxbuild.FileName(m, a)
		fresh, err := tk.Compile(ctx, ".", m, a)
		if err != nil {
			t.Fatal(err)
		}
		embedded, err := cuda.PTX(m, a)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, embedded) {
			t.Errorf("ptx/%s is not what %s.cu compiles to (run make ptx): %s", name, m, firstDiff(embedded, fresh))
		}
		fns, err := tk.Assemble(ctx, fresh, a)
		if err != nil {
			t.Fatalf("ptxas -arch=sm_%d %s: %v", a, name, err)
		}
		seen := map[string]bool{}
		for _, f := range fns {
			if f.SpillStores != 0 || f.SpillLoads != 0 {
				t.Errorf("sm_%d %s: %d bytes spill stores, %d bytes spill loads", a, f.Name, f.SpillStores, f.SpillLoads)
			}
			if f.Entry {
				seen[f.Name] = true
				t.Logf("sm_%d %s: %d registers, %d bytes stack frame", a, f.Name, f.Registers, f.StackFrame)
			}
		}
		for _, k := range ptxbuild.Kernels(src) {
			if !seen[k] {
				t.Errorf("ptxas -arch=sm_%d %s said nothing of kernel %s", a, name, k)
			}
		}
	}
}

// firstDiff names the first line where two texts differ.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: committed %q, nvcc now %q", i+1, x, y)
		}
	}
	return "they differ"
}

// TestLoadKernelsOldDriver: a driver whose PTX compiler is older than the
// PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) is named as the cause, with the
// module and what to do: the driver's own text, "compiled with an
// unsupported toolchain", said neither.
func TestLoadKernelsOldDriver(t *testing.T) {
	drv := cudafake.NewDriver(1, 0)
	drv.SetComputeCapability(9, 0)
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	drv.FailNext("cuModuleLoadData", cuda.CUDAErrorUnsupportedPTXVersion)
	_, err = dev.LoadKernels("rmsnorm")
	var ce *cuda.Error
	if err == nil || !errors.As(err, &ce) || ce.Code != cuda.CUDAErrorUnsupportedPTXVersion ||
		!strings.Contains(err.Error(), `"rmsnorm"`) || !strings.Contains(err.Error(), "update the NVIDIA driver") {
		t.Errorf("LoadKernels on an old driver: %v, want the module named and an update of the driver asked for", err)
	}
}
