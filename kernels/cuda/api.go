package cuda

import (
	"fmt"
	"unsafe"
)

// The slice of the CUDA Driver API and cuBLAS this package calls, as Go
// interfaces: LoadDriver and LoadBLAS return the real libraries bound at run
// time, and kernels/cuda/cudafake a CPU stand-in for tests. Methods mirror one
// C entry point each (named in their doc) and turn its status into an *Error;
// they validate nothing the library validates itself.

// DevPtr is a device address (CUdeviceptr).
type DevPtr uint64

// DeviceID is a device handle (CUdevice), as returned by DeviceGet.
type DeviceID int32

// Context, Module, Function, Event and BLASHandle are opaque handles
// (CUcontext, CUmodule, CUfunction, CUevent, cublasHandle_t).
type (
	Context    uintptr
	Module     uintptr
	Function   uintptr
	Event      uintptr
	BLASHandle uintptr
)

// Dim3 is a launch grid or block shape.
type Dim3 struct{ X, Y, Z int }

// Threads is X·Y·Z.
func (d Dim3) Threads() int { return d.X * d.Y * d.Z }

// Driver is the CUDA Driver API as the backend uses it. A context is current
// per OS thread: callers lock the goroutine to its thread (runtime.LockOSThread)
// between CtxSetCurrent and the calls that need it.
type Driver interface {
	// Path is the library the driver was loaded from ("fake" for a fake).
	Path() string
	// Init is cuInit(0).
	Init() error
	// Version is cuDriverGetVersion: 1000·major + 10·minor (13000 for 13.0).
	Version() (int, error)
	// DeviceCount is cuDeviceGetCount.
	DeviceCount() (int, error)
	// DeviceGet is cuDeviceGet.
	DeviceGet(ordinal int) (DeviceID, error)
	// DeviceName is cuDeviceGetName.
	DeviceName(DeviceID) (string, error)
	// ComputeCapability is cuDeviceGetAttribute of
	// CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR and _MINOR (9, 0 for an H200).
	ComputeCapability(DeviceID) (major, minor int, err error)
	// PrimaryCtxRetain is cuDevicePrimaryCtxRetain (the context the CUDA
	// runtime shares; its ABI did not change across versions, unlike
	// cuCtxCreate's, which grew parameters in CUDA 12.5).
	PrimaryCtxRetain(DeviceID) (Context, error)
	// PrimaryCtxRelease is cuDevicePrimaryCtxRelease_v2.
	PrimaryCtxRelease(DeviceID) error
	// CtxSetCurrent is cuCtxSetCurrent.
	CtxSetCurrent(Context) error
	// CtxSynchronize is cuCtxSynchronize.
	CtxSynchronize() error
	// MemAlloc is cuMemAlloc_v2.
	MemAlloc(bytes int) (DevPtr, error)
	// MemFree is cuMemFree_v2 (it frees managed memory too).
	MemFree(DevPtr) error
	// MemAllocManaged is cuMemAllocManaged with CU_MEM_ATTACH_GLOBAL:
	// memory whose address is valid on the host and on every device, its
	// pages migrating to the processor that touches them.
	MemAllocManaged(bytes int) (DevPtr, error)
	// MemsetD32 is cuMemsetD32_v2: n 32-bit words at p set to v, on the
	// device (managed pages are first touched there).
	MemsetD32(p DevPtr, v uint32, n int) error
	// MemcpyHtoD is cuMemcpyHtoD_v2 of len(src) bytes.
	MemcpyHtoD(dst DevPtr, src []byte) error
	// MemcpyDtoH is cuMemcpyDtoH_v2 of len(dst) bytes.
	MemcpyDtoH(dst []byte, src DevPtr) error
	// ModuleLoadData is cuModuleLoadData; PTX text must end in a NUL byte.
	ModuleLoadData(image []byte) (Module, error)
	// ModuleUnload is cuModuleUnload.
	ModuleUnload(Module) error
	// ModuleGetFunction is cuModuleGetFunction.
	ModuleGetFunction(m Module, name string) (Function, error)
	// DeviceAttribute is cuDeviceGetAttribute (DeviceAttrSharedOptin: the
	// shared memory a block can opt in to).
	DeviceAttribute(dev DeviceID, attr int) (int, error)
	// FuncSetAttribute is cuFuncSetAttribute (FuncAttrMaxDynamicShared:
	// the dynamic shared memory the kernel's launches may ask for beyond
	// 48 KiB).
	FuncSetAttribute(f Function, attr, value int) error
	// LaunchKernel is cuLaunchKernel on the default stream; params[i] points
	// at the value of the kernel's i-th parameter.
	LaunchKernel(f Function, grid, block Dim3, sharedBytes int, params []unsafe.Pointer) error
	// MemAllocHost is cuMemAllocHost_v2: page-locked host memory, which
	// cuMemcpyDtoH fills by DMA at the link's rate (pageable memory it
	// fills through the driver's staging buffers).
	MemAllocHost(bytes int) (unsafe.Pointer, error)
	// MemFreeHost is cuMemFreeHost.
	MemFreeHost(p unsafe.Pointer) error
	// EventCreate is cuEventCreate with CU_EVENT_DEFAULT: an event that
	// records a timestamp (the cuBLASLt autotune times candidates with
	// them, gemmlt.go).
	EventCreate() (Event, error)
	// EventRecord is cuEventRecord on the default stream: the event
	// completes, and takes its timestamp, once the work queued before it
	// has run.
	EventRecord(Event) error
	// EventSynchronize is cuEventSynchronize: it waits for the event's
	// completion (at once when it was never recorded).
	EventSynchronize(Event) error
	// EventElapsedTime is cuEventElapsedTime: the milliseconds from start
	// to end, both recorded and completed (CUDA_ERROR_NOT_READY when one
	// has not completed yet).
	EventElapsedTime(start, end Event) (float32, error)
	// EventDestroy is cuEventDestroy_v2.
	EventDestroy(Event) error
}

// The attributes of DeviceAttribute and FuncSetAttribute this package uses.
const (
	// DeviceAttrSharedOptin is CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
	// the most shared memory (static and dynamic) a block of a kernel
	// opted in can have (227 KiB on sm_90).
	DeviceAttrSharedOptin = 97
	// FuncAttrMaxDynamicShared is CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
	// the most dynamic shared memory a launch of the kernel may ask for.
	FuncAttrMaxDynamicShared = 8
	// SharedDefault is the shared memory a block gets without opting in:
	// a launch asking for more dynamic bytes fails unless its kernel's
	// FuncAttrMaxDynamicShared allows them.
	SharedDefault = 48 << 10
)

// Op is cublasOperation_t.
type Op int32

// The operations on a GEMM operand.
const (
	OpN Op = 0 // CUBLAS_OP_N: as stored
	OpT Op = 1 // CUBLAS_OP_T: transposed
)

func (o Op) String() string {
	if o == OpT {
		return "T"
	}
	return "N"
}

// Gemm is one column-major single-precision product, cuBLAS's argument list:
//
//	C[m,n] = Alpha·op(A)·op(B) + Beta·C
//
// op(A) is m×k, op(B) k×n; element (i,j) of a column-major matrix X with
// leading dimension ldx is X[i + j·ldx]. The strides (in elements) and Batch
// are read by SgemmStridedBatched only: product b uses A+b·StrideA, and so on.
type Gemm struct {
	TransA, TransB Op
	M, N, K        int
	Alpha, Beta    float32
	A              DevPtr
	LDA            int
	StrideA        int64
	B              DevPtr
	LDB            int
	StrideB        int64
	C              DevPtr
	LDC            int
	StrideC        int64
	Batch          int
}

// BLAS is cuBLAS as the backend uses it. Calls run on the default stream of
// the context current when Create was called.
type BLAS interface {
	// Path is the library cuBLAS was loaded from ("fake" for a fake).
	Path() string
	// Create is cublasCreate_v2.
	Create() (BLASHandle, error)
	// Destroy is cublasDestroy_v2.
	Destroy(BLASHandle) error
	// Sgemm is cublasSgemm_v2 (host-side alpha and beta).
	Sgemm(h BLASHandle, g Gemm) error
	// SgemmStridedBatched is cublasSgemmStridedBatched.
	SgemmStridedBatched(h BLASHandle, g Gemm) error
	// GemmEx is cublasGemmEx with host-side float alpha and beta and
	// CUBLAS_GEMM_DEFAULT: g's product (Batch and the strides unread) on
	// operands of the types t names, accumulated as t.Compute says.
	GemmEx(h BLASHandle, g Gemm, t GemmTypes) error
	// GemmStridedBatchedEx is cublasGemmStridedBatchedEx, GemmEx on
	// g.Batch products whose operands lie g.StrideA, g.StrideB and
	// g.StrideC elements (of their types) apart, host-side float alpha and
	// beta, CUBLAS_GEMM_DEFAULT.
	GemmStridedBatchedEx(h BLASHandle, g Gemm, t GemmTypes) error
}

// DataType is cudaDataType_t, the element type of a GemmEx operand. The
// values are those of library_types.h (Debian's nvidia-cuda-dev 11.8,
// /usr/include/library_types.h; part of the ABI: later versions add
// values, they do not renumber these).
type DataType int32

// The operand types Hone uses.
const (
	R32F  DataType = 0  // CUDA_R_32F: float
	R16BF DataType = 14 // CUDA_R_16BF: nv_bfloat16
)

func (t DataType) String() string {
	switch t {
	case R32F:
		return "CUDA_R_32F"
	case R16BF:
		return "CUDA_R_16BF"
	}
	return fmt.Sprintf("cudaDataType(%d)", int32(t))
}

// Bytes returns the size of one element of type t: 2 for CUDA_R_16BF, 4
// for CUDA_R_32F.
func (t DataType) Bytes() int {
	if t == R16BF {
		return 2
	}
	return 4
}

// ComputeType is cublasComputeType_t, the arithmetic of a GemmEx. The
// values are those of cublas_api.h (Debian's nvidia-cuda-dev 11.8,
// /usr/include/cublas_api.h; part of the ABI, as DataType's).
type ComputeType int32

// The compute types Hone uses.
const (
	// Compute32F is CUBLAS_COMPUTE_32F, float32 arithmetic: the bf16
	// precision's products on bfloat16 operands (float32 accumulation).
	Compute32F ComputeType = 68
	// Compute32FFastTF32 is CUBLAS_COMPUTE_32F_FAST_TF32 ("allows
	// down-converting inputs to TF32"): float32 operands rounded to TF32
	// (10 mantissa bits) on the tensor cores, float32 accumulation; the bf16
	// precision's Matmul (Device.MatmulTF32).
	Compute32FFastTF32 ComputeType = 77
)

func (c ComputeType) String() string {
	switch c {
	case Compute32F:
		return "CUBLAS_COMPUTE_32F"
	case Compute32FFastTF32:
		return "CUBLAS_COMPUTE_32F_FAST_TF32"
	}
	return fmt.Sprintf("cublasComputeType(%d)", int32(c))
}

// GemmTypes are the element types of a GemmEx's A, B and C and its compute
// type. Alpha and beta are float, as CUBLAS_COMPUTE_32F wants.
type GemmTypes struct {
	A, B, C DataType
	Compute ComputeType
}

// gemmDefault is CUBLAS_GEMM_DEFAULT (cublasGemmAlgo_t, cublas_api.h).
const gemmDefault = -1
