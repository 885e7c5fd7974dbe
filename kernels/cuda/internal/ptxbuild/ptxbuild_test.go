package ptxbuild

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// ptxas 11.8's -v report on rmsnorm.cu, with a device function and spills
// added as ptxas words them.
const report = `ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'rmsnorm_forward' for 'sm_90'
ptxas info    : Function properties for rmsnorm_forward
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, 128 bytes smem
ptxas info    : Compiling entry function 'big' for 'sm_90'
ptxas info    : Function properties for big
    96 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, 392 bytes cmem[0]
`

func TestParsePtxasInfo(t *testing.T) {
	fns, err := ParsePtxasInfo(report)
	if err != nil {
		t.Fatal(err)
	}
	want := []Function{
		{Name: "helper", Registers: -1, StackFrame: 8, SpillStores: 4, SpillLoads: 4},
		{Name: "rmsnorm_forward", Entry: true, Target: "sm_90", Registers: 18},
		{Name: "big", Entry: true, Target: "sm_90", Registers: 255, StackFrame: 96, SpillStores: 40, SpillLoads: 36},
	}
	if !slices.Equal(fns, want) {
		t.Errorf("got %+v\nwant %+v", fns, want)
	}
	// A kernel without its properties line (the format changed) must not
	// pass as spill-free.
	_, err = ParsePtxasInfo(strings.Replace(report, "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n", "", 1))
	if err == nil || !strings.Contains(err.Error(), "no stack frame and spill line for rmsnorm_forward") {
		t.Errorf("properties missing: %v", err)
	}
	if _, err := ParsePtxasInfo("ptxas info    : 0 bytes gmem\n"); err == nil {
		t.Error("a report naming no function: no error")
	}
}

func TestEntriesAndKernels(t *testing.T) {
	ptx := []byte(".version 7.8\n.target sm_80\n.address_size 64\n\n.visible .entry a(\n\t.param .u64 p\n)\n.func helper(\n.visible .entry b_2(\n")
	if got := Entries(ptx); !slices.Equal(got, []string{"a", "b_2"}) {
		t.Errorf("Entries = %v", got)
	}
	if got := Target(ptx); got != "sm_80" {
		t.Errorf("Target = %q", got)
	}
	src := []byte("__device__ float f(float);\nextern \"C\" __global__ void a(float *p) {}\n// __global__ void c()\nextern \"C\"  __global__\nvoid b_2 (int n) {}\n")
	if got := Kernels(src); !slices.Equal(got, []string{"a", "b_2"}) {
		t.Errorf("Kernels = %v", got)
	}
}

// Without nvcc anywhere, FindToolkit says so with an error wrapping
// exec.ErrNotFound (the tests skip on it, or fail under CI).
func TestFindToolkitMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findToolkit("", "", nil)
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "nvidia-cuda-toolkit") {
		t.Errorf("FindToolkit without nvcc: %v", err)
	}
}
