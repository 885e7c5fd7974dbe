package cuda

// cuBLASLt (cublasLt.h) as the backend uses it: the minimum to run one
// GEMM through cublasLtMatmul with an algorithm from its heuristic and a
// workspace. The enum values and struct layouts are those of Debian's
// nvidia-cuda-toolkit 11.8 header, /usr/include/cublasLt.h; the ones used
// here kept their values in CUDA 12 and 13 (later versions removed other
// preference attributes, 2 and 4, and left the gaps, they renumbered none
// of these), and the struct sizes (cublasLtMatmulAlgo_t: 8 uint64;
// cublasLtMatmulHeuristicResult_t: the algo, a size_t, two 4-byte fields
// and int[4], 96 bytes) are the same in 11, 12 and 13.

// Opaque cuBLASLt handles: cublasLtHandle_t, cublasLtMatmulDesc_t,
// cublasLtMatrixLayout_t, cublasLtMatmulPreference_t.
type (
	LtHandle     uintptr
	LtMatmulDesc uintptr
	LtLayout     uintptr
	LtPreference uintptr
)

// LtDescAttr is cublasLtMatmulDescAttributes_t; every one Hone sets is an
// int32_t.
type LtDescAttr int32

// The matmul descriptor attributes Hone sets (cublasLt.h).
const (
	LtDescTransA LtDescAttr = 3 // CUBLASLT_MATMUL_DESC_TRANSA, int32_t cublasOperation_t
	LtDescTransB LtDescAttr = 4 // CUBLASLT_MATMUL_DESC_TRANSB, int32_t cublasOperation_t
)

// LtPrefAttr is cublasLtMatmulPreferenceAttributes_t.
type LtPrefAttr int32

// The preference attributes Hone sets (cublasLt.h).
const (
	// LtPrefMaxWorkspaceBytes is CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
	// uint64_t, default 0 (no workspace).
	LtPrefMaxWorkspaceBytes LtPrefAttr = 1
	// LtPrefMinAlignA (B, C, D) are CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES
	// (_B, _C, _D), uint32_t, default 256: the heuristic assumes operands
	// that aligned unless told less, and an algorithm it picks may refuse a
	// less aligned pointer.
	LtPrefMinAlignA LtPrefAttr = 5
	LtPrefMinAlignB LtPrefAttr = 6
	LtPrefMinAlignC LtPrefAttr = 7
	LtPrefMinAlignD LtPrefAttr = 8
)

// LtPrefAttrBytes is the size of the C type of a preference attribute's
// value: 8 for the workspace bound (uint64_t), 4 for the others (uint32_t).
func LtPrefAttrBytes(a LtPrefAttr) int {
	if a == LtPrefMaxWorkspaceBytes {
		return 8
	}
	return 4
}

// LtAlgo is cublasLtMatmulAlgo_t, opaque to the caller.
type LtAlgo struct{ Data [8]uint64 }

// LtHeuristic is cublasLtMatmulHeuristicResult_t, laid out as the C struct
// (96 bytes), so that the binding hands the library a slice of them.
type LtHeuristic struct {
	Algo          LtAlgo
	WorkspaceSize uint64 // size_t: the workspace the algorithm needs
	State         int32  // cublasStatus_t: the other fields are valid when 0
	WavesCount    float32
	_             [4]int32
}

// LtMatmul is one cublasLtMatmul call: D = Alpha·op(A)·op(B) + Beta·C, the
// operations and types in Desc, the shapes in the layouts (column-major),
// with host-side float alpha and beta, on the default stream.
type LtMatmul struct {
	Desc           LtMatmulDesc
	Alpha, Beta    float32
	A              DevPtr
	ALayout        LtLayout
	B              DevPtr
	BLayout        LtLayout
	C              DevPtr
	CLayout        LtLayout
	D              DevPtr
	DLayout        LtLayout
	Algo           LtAlgo
	Workspace      DevPtr
	WorkspaceBytes int
}

// BLASLt is cuBLASLt as the backend uses it: one method per C entry point
// (named in its doc), the status turned into an *Error. LoadBLASLt returns
// the real library, kernels/cuda/cudafake a CPU stand-in.
type BLASLt interface {
	// Path is the library cuBLASLt was loaded from ("fake" for a fake).
	Path() string
	// Create is cublasLtCreate.
	Create() (LtHandle, error)
	// Destroy is cublasLtDestroy.
	Destroy(LtHandle) error
	// MatmulDescCreate is cublasLtMatmulDescCreate.
	MatmulDescCreate(compute ComputeType, scale DataType) (LtMatmulDesc, error)
	// MatmulDescDestroy is cublasLtMatmulDescDestroy.
	MatmulDescDestroy(LtMatmulDesc) error
	// MatmulDescSetAttribute is cublasLtMatmulDescSetAttribute of an
	// int32_t attribute.
	MatmulDescSetAttribute(d LtMatmulDesc, a LtDescAttr, v int32) error
	// MatrixLayoutCreate is cublasLtMatrixLayoutCreate: a column-major
	// rows×cols matrix of type t with leading dimension ld.
	MatrixLayoutCreate(t DataType, rows, cols uint64, ld int64) (LtLayout, error)
	// MatrixLayoutDestroy is cublasLtMatrixLayoutDestroy.
	MatrixLayoutDestroy(LtLayout) error
	// MatmulPreferenceCreate is cublasLtMatmulPreferenceCreate.
	MatmulPreferenceCreate() (LtPreference, error)
	// MatmulPreferenceDestroy is cublasLtMatmulPreferenceDestroy.
	MatmulPreferenceDestroy(LtPreference) error
	// MatmulPreferenceSetAttribute is cublasLtMatmulPreferenceSetAttribute,
	// v written as the attribute's C type (LtPrefAttrBytes).
	MatmulPreferenceSetAttribute(p LtPreference, a LtPrefAttr, v uint64) error
	// MatmulAlgoGetHeuristic is cublasLtMatmulAlgoGetHeuristic asking for up
	// to n results; it returns those written, best first.
	MatmulAlgoGetHeuristic(h LtHandle, d LtMatmulDesc, a, b, c, dl LtLayout, p LtPreference, n int) ([]LtHeuristic, error)
	// Matmul is cublasLtMatmul on the default stream.
	Matmul(h LtHandle, m LtMatmul) error
}
