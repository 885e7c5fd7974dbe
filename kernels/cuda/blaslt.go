package cuda

import (
	"fmt"
	"unsafe"
)

// blasLtLib is cuBLASLt bound at run time.
type blasLtLib struct {
	path          string
	create        func(h *uintptr) int32
	destroy       func(h uintptr) int32
	descCreate    func(d *uintptr, compute int32, scale int32) int32
	descDestroy   func(d uintptr) int32
	descSet       func(d uintptr, attr int32, buf unsafe.Pointer, size uintptr) int32
	layoutCreate  func(l *uintptr, t int32, rows, cols uint64, ld int64) int32
	layoutDestroy func(l uintptr) int32
	prefCreate    func(p *uintptr) int32
	prefDestroy   func(p uintptr) int32
	prefSet       func(p uintptr, attr int32, buf unsafe.Pointer, size uintptr) int32
	heuristic     func(h, d, a, b, c, dl, p uintptr, n int32, res unsafe.Pointer, count *int32) int32
	matmul        func(h, d uintptr, alpha *float32, a uint64, al uintptr, b uint64, bl uintptr, beta *float32,
		c uint64, cl uintptr, dd uint64, dl uintptr, algo *LtAlgo, ws uint64, wsSize uintptr, stream uintptr) int32
	statusName   func(s int32) string // cublasLtGetStatusName
	statusString func(s int32) string // cublasLtGetStatusString
}

func (b *blasLtLib) symbols() []symbol {
	return []symbol{
		{name: "cublasLtCreate", fptr: &b.create},
		{name: "cublasLtDestroy", fptr: &b.destroy},
		{name: "cublasLtMatmulDescCreate", fptr: &b.descCreate},
		{name: "cublasLtMatmulDescDestroy", fptr: &b.descDestroy},
		{name: "cublasLtMatmulDescSetAttribute", fptr: &b.descSet},
		{name: "cublasLtMatrixLayoutCreate", fptr: &b.layoutCreate},
		{name: "cublasLtMatrixLayoutDestroy", fptr: &b.layoutDestroy},
		{name: "cublasLtMatmulPreferenceCreate", fptr: &b.prefCreate},
		{name: "cublasLtMatmulPreferenceDestroy", fptr: &b.prefDestroy},
		{name: "cublasLtMatmulPreferenceSetAttribute", fptr: &b.prefSet},
		{name: "cublasLtMatmulAlgoGetHeuristic", fptr: &b.heuristic},
		{name: "cublasLtMatmul", fptr: &b.matmul},
		{name: "cublasLtGetStatusName", fptr: &b.statusName, optional: true},
		{name: "cublasLtGetStatusString", fptr: &b.statusString, optional: true},
	}
}

// LoadBLASLt loads cuBLASLt from path, or, when path is empty, by its
// sonames for CUDA 13, 12 and 11. A library that is absent or lacks an
// entry point gives a *MissingError. cuBLASLt is optional: without it the
// backend runs its GEMMs on cuBLAS (cublasGemmEx), and only
// Ops.SetGEMMLibrary(GEMMCublasLt) needs it.
func LoadBLASLt(path string) (BLASLt, error) { return loadBLASLt(path, 0) }

// loadBLASLt is LoadBLASLt trying, without a path, only the sonames of
// CUDA majors up to major (all when it is 0): Open passes cuBLAS's own, as
// cuBLAS runs on the cuBLASLt of its release.
func loadBLASLt(path string, major int) (BLASLt, error) {
	b := &blasLtLib{}
	used, tried, err := openLib(path, versionedSonames("libcublasLt", major), func(h uintptr) error { return bindAll(h, b.symbols()) })
	if err != nil {
		return nil, &MissingError{What: "cuBLASLt library", Tried: tried, Err: err, Optional: true,
			Hint: "the backend keeps cublasGemmEx without it; install CUDA's cuBLAS (libcublasLt ships with it), or give its path (Options.BLASLtLib)"}
	}
	b.path = used
	return b, nil
}

func (b *blasLtLib) check(call string, s int32) error {
	return blasStatus(call, s, b.statusName, b.statusString)
}

func (b *blasLtLib) Path() string { return b.path }

func (b *blasLtLib) Create() (LtHandle, error) {
	var h uintptr
	err := b.check("cublasLtCreate", b.create(&h))
	return LtHandle(h), err
}

func (b *blasLtLib) Destroy(h LtHandle) error {
	return b.check("cublasLtDestroy", b.destroy(uintptr(h)))
}

func (b *blasLtLib) MatmulDescCreate(compute ComputeType, scale DataType) (LtMatmulDesc, error) {
	var d uintptr
	err := b.check("cublasLtMatmulDescCreate", b.descCreate(&d, int32(compute), int32(scale)))
	return LtMatmulDesc(d), err
}

func (b *blasLtLib) MatmulDescDestroy(d LtMatmulDesc) error {
	return b.check("cublasLtMatmulDescDestroy", b.descDestroy(uintptr(d)))
}

func (b *blasLtLib) MatmulDescSetAttribute(d LtMatmulDesc, a LtDescAttr, v int32) error {
	return b.check("cublasLtMatmulDescSetAttribute", b.descSet(uintptr(d), int32(a), unsafe.Pointer(&v), 4))
}

func (b *blasLtLib) MatrixLayoutCreate(t DataType, rows, cols uint64, ld int64) (LtLayout, error) {
	var l uintptr
	err := b.check("cublasLtMatrixLayoutCreate", b.layoutCreate(&l, int32(t), rows, cols, ld))
	return LtLayout(l), err
}

func (b *blasLtLib) MatrixLayoutDestroy(l LtLayout) error {
	return b.check("cublasLtMatrixLayoutDestroy", b.layoutDestroy(uintptr(l)))
}

func (b *blasLtLib) MatmulPreferenceCreate() (LtPreference, error) {
	var p uintptr
	err := b.check("cublasLtMatmulPreferenceCreate", b.prefCreate(&p))
	return LtPreference(p), err
}

func (b *blasLtLib) MatmulPreferenceDestroy(p LtPreference) error {
	return b.check("cublasLtMatmulPreferenceDestroy", b.prefDestroy(uintptr(p)))
}

func (b *blasLtLib) MatmulPreferenceSetAttribute(p LtPreference, a LtPrefAttr, v uint64) error {
	if LtPrefAttrBytes(a) == 8 {
		return b.check("cublasLtMatmulPreferenceSetAttribute", b.prefSet(uintptr(p), int32(a), unsafe.Pointer(&v), 8))
	}
	if v > 1<<32-1 {
		return fmt.Errorf("cublasLtMatmulPreferenceSetAttribute: attribute %d = %d does not fit a uint32_t", a, v)
	}
	w := uint32(v)
	return b.check("cublasLtMatmulPreferenceSetAttribute", b.prefSet(uintptr(p), int32(a), unsafe.Pointer(&w), 4))
}

func (b *blasLtLib) MatmulAlgoGetHeuristic(h LtHandle, d LtMatmulDesc, a, bl, c, dl LtLayout, p LtPreference, n int) ([]LtHeuristic, error) {
	cn, err := cInt("requested algorithms", n)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("cublasLtMatmulAlgoGetHeuristic: %d results asked for", n)
	}
	res := make([]LtHeuristic, n)
	var got int32
	err = b.check("cublasLtMatmulAlgoGetHeuristic", b.heuristic(uintptr(h), uintptr(d), uintptr(a), uintptr(bl), uintptr(c), uintptr(dl),
		uintptr(p), cn, unsafe.Pointer(&res[0]), &got))
	if err != nil {
		return nil, err
	}
	return res[:max(0, min(int(got), n))], nil
}

func (b *blasLtLib) Matmul(h LtHandle, m LtMatmul) error {
	if m.WorkspaceBytes < 0 {
		return fmt.Errorf("cublasLtMatmul: workspace of %d bytes", m.WorkspaceBytes)
	}
	alpha, beta, algo := m.Alpha, m.Beta, m.Algo
	return b.check("cublasLtMatmul", b.matmul(uintptr(h), uintptr(m.Desc), &alpha, uint64(m.A), uintptr(m.ALayout),
		uint64(m.B), uintptr(m.BLayout), &beta, uint64(m.C), uintptr(m.CLayout), uint64(m.D), uintptr(m.DLayout),
		&algo, uint64(m.Workspace), uintptr(m.WorkspaceBytes), 0))
}

// Compile-time check of the heuristic result's C layout (96 bytes).
var _ [96 - unsafe.Sizeof(LtHeuristic{})]byte
var _ [unsafe.Sizeof(LtHeuristic{}) - 96]byte
