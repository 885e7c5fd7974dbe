package cuda

import (
	"fmt"
	"strings"
)

// The CUresult and cublasStatus_t codes this package names.
const (
	CUDASuccess           = 0
	CUDAErrorInvalidValue = 1   // CUDA_ERROR_INVALID_VALUE
	CUDAErrorOutOfMemory  = 2   // CUDA_ERROR_OUT_OF_MEMORY
	CUDAErrorStubLibrary  = 34  // CUDA_ERROR_STUB_LIBRARY: the toolkit's link-time stub of libcuda was loaded
	CUDAErrorNoDevice     = 100 // CUDA_ERROR_NO_DEVICE
	CUDAErrorNotFound     = 500 // CUDA_ERROR_NOT_FOUND
	// CUDAErrorUnsupportedPTXVersion is CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
	// the driver cannot compile PTX of that ISA version.
	CUDAErrorUnsupportedPTXVersion = 222
	CUDAErrorNotReady              = 600 // CUDA_ERROR_NOT_READY
	BLASStatusInvalidValue         = 7   // CUBLAS_STATUS_INVALID_VALUE
	BLASStatusNotSupported         = 15  // CUBLAS_STATUS_NOT_SUPPORTED
)

// driverCodeName names the CUresult codes above, for a library that names
// none itself: the toolkit's stub of libcuda answers every call, its
// cuGetErrorName included, with CUDA_ERROR_STUB_LIBRARY.
func driverCodeName(code int) string {
	switch code {
	case CUDAErrorInvalidValue:
		return "CUDA_ERROR_INVALID_VALUE"
	case CUDAErrorOutOfMemory:
		return "CUDA_ERROR_OUT_OF_MEMORY"
	case CUDAErrorStubLibrary:
		return "CUDA_ERROR_STUB_LIBRARY"
	case CUDAErrorNoDevice:
		return "CUDA_ERROR_NO_DEVICE"
	case CUDAErrorNotFound:
		return "CUDA_ERROR_NOT_FOUND"
	case CUDAErrorUnsupportedPTXVersion:
		return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
	case CUDAErrorNotReady:
		return "CUDA_ERROR_NOT_READY"
	}
	return ""
}

// Error is a failed call into the driver or cuBLAS.
type Error struct {
	Call string // the C entry point, "cuMemAlloc_v2"
	Code int    // its CUresult or cublasStatus_t
	Name string // the code's name, "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // the library's description of the code; may be empty
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("error %d", e.Code)
	}
	if e.Text == "" || e.Text == name {
		return fmt.Sprintf("%s: %s", e.Call, name)
	}
	return fmt.Sprintf("%s: %s (%s)", e.Call, name, e.Text)
}

// MissingError says what a machine lacks for the CUDA backend: the driver
// library, the cuBLAS library, or a device. Open returns it; commands print it
// and exit 1.
type MissingError struct {
	What  string   // "CUDA driver library", "cuBLAS library" or "CUDA device"
	Tried []string // the paths or sonames tried, for the libraries
	Hint  string   // what to do about it
	Err   error    // the last loader or driver error
	// Optional marks a library the backend runs without (cuBLASLt): its
	// absence disables one choice, not the backend.
	Optional bool
}

func (e *MissingError) Error() string {
	var b strings.Builder
	if e.Optional {
		fmt.Fprintf(&b, "optional CUDA library unavailable: no %s", e.What)
	} else {
		fmt.Fprintf(&b, "CUDA backend unavailable: no %s", e.What)
	}
	if len(e.Tried) > 0 {
		fmt.Fprintf(&b, " (tried %s)", strings.Join(e.Tried, ", "))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	return b.String()
}

func (e *MissingError) Unwrap() error { return e.Err }
