package cuda

import "fmt"

// blasLib is cuBLAS bound at run time.
type blasLib struct {
	path    string
	create  func(h *uintptr) int32
	destroy func(h uintptr) int32
	sgemm   func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a uint64, lda int32,
		b uint64, ldb int32, beta *float32, c uint64, ldc int32) int32
	sgemmStridedBatched func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a uint64, lda int32, sa int64,
		b uint64, ldb int32, sb int64, beta *float32, c uint64, ldc int32, sc int64, batch int32) int32
	gemmEx func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a uint64, at int32, lda int32,
		b uint64, bt int32, ldb int32, beta *float32, c uint64, ct int32, ldc int32, compute int32, algo int32) int32
	gemmStridedBatchedEx func(h uintptr, ta, tb, m, n, k int32, alpha *float32, a uint64, at int32, lda int32, sa int64,
		b uint64, bt int32, ldb int32, sb int64, beta *float32, c uint64, ct int32, ldc int32, sc int64,
		batch int32, compute int32, algo int32) int32
	statusName   func(s int32) string // cublasGetStatusName (CUDA ≥ 11.4)
	statusString func(s int32) string // cublasGetStatusString (CUDA ≥ 11.4)
}

func (b *blasLib) symbols() []symbol {
	return []symbol{
		{name: "cublasCreate_v2", fptr: &b.create},
		{name: "cublasDestroy_v2", fptr: &b.destroy},
		{name: "cublasSgemm_v2", fptr: &b.sgemm},
		{name: "cublasSgemmStridedBatched", fptr: &b.sgemmStridedBatched},
		{name: "cublasGemmEx", fptr: &b.gemmEx},
		{name: "cublasGemmStridedBatchedEx", fptr: &b.gemmStridedBatchedEx},
		{name: "cublasGetStatusName", fptr: &b.statusName, optional: true},
		{name: "cublasGetStatusString", fptr: &b.statusString, optional: true},
	}
}

// LoadBLAS loads cuBLAS from path, or, when path is empty, by its sonames
// for CUDA 13, 12 and 11. A library that is absent or lacks an entry point
// gives a *MissingError.
func LoadBLAS(path string) (BLAS, error) { return loadBLAS(path, 0) }

// loadBLAS is LoadBLAS trying, without a path, only the sonames of CUDA
// majors up to driverMajor (all when it is 0): the libraries the driver
// runs.
func loadBLAS(path string, driverMajor int) (BLAS, error) {
	b := &blasLib{}
	used, tried, err := openLib(path, versionedSonames("libcublas", driverMajor), func(h uintptr) error { return bindAll(h, b.symbols()) })
	if err != nil {
		hint := "install CUDA's cuBLAS, or set HONE_LIBCUBLAS to the path of libcublas.so (pip's nvidia-cublas puts it in site-packages/nvidia/cublas/lib)"
		if path == "" && driverMajor > 0 && driverMajor < 13 {
			hint = fmt.Sprintf("the driver runs CUDA %d and older, so cuBLAS of later CUDA was not tried; %s", driverMajor, hint)
		}
		return nil, &MissingError{What: "cuBLAS library", Tried: tried, Err: err, Hint: hint}
	}
	b.path = used
	return b, nil
}

func (b *blasLib) check(call string, s int32) error {
	return blasStatus(call, s, b.statusName, b.statusString)
}

// blasStatus is a cuBLAS or cuBLASLt call's status s as an error (nil for
// success), named and described by the library's own functions where it
// has them (name and text may be nil: they came in CUDA 11.4).
func blasStatus(call string, s int32, name, text func(int32) string) error {
	if s == 0 {
		return nil
	}
	e := &Error{Call: call, Code: int(s)}
	if name != nil {
		e.Name = name(s)
	}
	if text != nil {
		e.Text = text(s)
	}
	return e
}

func (b *blasLib) Path() string { return b.path }

func (b *blasLib) Create() (BLASHandle, error) {
	var h uintptr
	err := b.check("cublasCreate_v2", b.create(&h))
	return BLASHandle(h), err
}

func (b *blasLib) Destroy(h BLASHandle) error {
	return b.check("cublasDestroy_v2", b.destroy(uintptr(h)))
}

// gemmInts converts g's sizes, leading dimensions and batch to C ints.
func gemmInts(g Gemm) ([7]int32, error) {
	var out [7]int32
	for i, v := range []struct {
		name string
		v    int
	}{{"m", g.M}, {"n", g.N}, {"k", g.K}, {"lda", g.LDA}, {"ldb", g.LDB}, {"ldc", g.LDC}, {"batch", g.Batch}} {
		c, err := cInt(v.name, v.v)
		if err != nil {
			return out, fmt.Errorf("gemm: %w", err)
		}
		out[i] = c
	}
	return out, nil
}

func (b *blasLib) Sgemm(h BLASHandle, g Gemm) error {
	c, err := gemmInts(g)
	if err != nil {
		return err
	}
	alpha, beta := g.Alpha, g.Beta
	return b.check("cublasSgemm_v2", b.sgemm(uintptr(h), int32(g.TransA), int32(g.TransB), c[0], c[1], c[2],
		&alpha, uint64(g.A), c[3], uint64(g.B), c[4], &beta, uint64(g.C), c[5]))
}

func (b *blasLib) SgemmStridedBatched(h BLASHandle, g Gemm) error {
	c, err := gemmInts(g)
	if err != nil {
		return err
	}
	alpha, beta := g.Alpha, g.Beta
	return b.check("cublasSgemmStridedBatched", b.sgemmStridedBatched(uintptr(h), int32(g.TransA), int32(g.TransB),
		c[0], c[1], c[2], &alpha, uint64(g.A), c[3], g.StrideA, uint64(g.B), c[4], g.StrideB,
		&beta, uint64(g.C), c[5], g.StrideC, c[6]))
}

func (b *blasLib) GemmEx(h BLASHandle, g Gemm, t GemmTypes) error {
	c, err := gemmInts(g)
	if err != nil {
		return err
	}
	alpha, beta := g.Alpha, g.Beta
	return b.check("cublasGemmEx", b.gemmEx(uintptr(h), int32(g.TransA), int32(g.TransB), c[0], c[1], c[2],
		&alpha, uint64(g.A), int32(t.A), c[3], uint64(g.B), int32(t.B), c[4],
		&beta, uint64(g.C), int32(t.C), c[5], int32(t.Compute), gemmDefault))
}

func (b *blasLib) GemmStridedBatchedEx(h BLASHandle, g Gemm, t GemmTypes) error {
	c, err := gemmInts(g)
	if err != nil {
		return err
	}
	alpha, beta := g.Alpha, g.Beta
	return b.check("cublasGemmStridedBatchedEx", b.gemmStridedBatchedEx(uintptr(h), int32(g.TransA), int32(g.TransB),
		c[0], c[1], c[2], &alpha, uint64(g.A), int32(t.A), c[3], g.StrideA, uint64(g.B), int32(t.B), c[4], g.StrideB,
		&beta, uint64(g.C), int32(t.C), c[5], g.StrideC, c[6], int32(t.Compute), gemmDefault))
}
