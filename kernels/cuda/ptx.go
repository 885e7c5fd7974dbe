package cuda

import (
	"embed"
	"errors"
	"fmt"
)

// The kernels' PTX: every *.cu beside this file compiled ahead of time by
// nvcc for each of ptxArches (`make ptx`, kernels/cuda/internal/ptxgen),
// committed, and embedded here; the driver JITs it for the device.
// kernels/cuda's tests check it is what the sources compile to today and
// that ptxas accepts every kernel without register spills.
//
//go:embed ptx/*.ptx
var ptxFiles embed.FS

// ptxArches are the virtual architectures the PTX is built for, ascending
// (compute_80: A100; compute_90: H100/H200); ptxbuild.Arches lists the same.
var ptxArches = []int{80, 90}

// PTXArches returns the architectures the embedded PTX is built for, as
// 10·major + minor of the compute capability, ascending.
func PTXArches() []int { return append([]int(nil), ptxArches...) }

// PTX returns the embedded PTX text of module (a .cu file's base name,
// "rmsnorm") for compute_arch (one of PTXArches).
func PTX(module string, arch int) ([]byte, error) {
	b, err := ptxFiles.ReadFile(fmt.Sprintf("ptx/%s.compute_%d.ptx", module, arch))
	if err != nil {
		return nil, fmt.Errorf("no PTX of kernel module %q for compute_%d: %w", module, arch, err)
	}
	return b, nil
}

// PTXArch returns the architecture of the PTX a device of compute
// capability cc (10·major + minor) runs: the newest of PTXArches not newer
// than the device. A device older than all of them is an error.
func PTXArch(cc int) (int, error) {
	best := 0
	for _, a := range ptxArches {
		if a <= cc {
			best = a
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("compute capability %d.%d: the kernels are built for compute_%d and newer", cc/10, cc%10, ptxArches[0])
	}
	return best, nil
}

// LoadKernels loads the embedded PTX of module built for this device's
// compute capability (see PTXArch).
func (d *Device) LoadKernels(module string) (*Kernels, error) {
	arch, err := PTXArch(d.cc)
	if err != nil {
		return nil, fmt.Errorf("CUDA %s: %w", d, err)
	}
	ptx, err := PTX(module, arch)
	if err != nil {
		return nil, err
	}
	k, err := d.LoadModule(ptx)
	var ce *Error
	switch {
	case errors.As(err, &ce) && ce.Code == CUDAErrorUnsupportedPTXVersion:
		// The driver's PTX compiler is older than the toolkit that wrote
		// the PTX: only a newer driver helps, which the code alone does not
		// say ("the provided PTX was compiled with an unsupported toolchain").
		return nil, fmt.Errorf("CUDA kernel module %q (PTX for compute_%d from CUDA 11.8): the driver is older than that PTX: update the NVIDIA driver to R520 or later: %w", module, arch, err)
	case err != nil:
		return nil, fmt.Errorf("CUDA kernel module %q (PTX for compute_%d): %w", module, arch, err)
	}
	return k, nil
}
