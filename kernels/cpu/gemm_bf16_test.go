//go:build cgo

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// bf16KindNames name the micro-kernels in test and benchmark names.
var bf16KindNames = map[bf16Kind]string{bf16Portable: "portable", bf16Native: "avx512bf16", bf16AMX: "amx"}

// needBF16Kind skips t when this CPU (or kernel) cannot run kind's
// micro-kernel, saying so, and only then.
func needBF16Kind(t testing.TB, kind bf16Kind) {
	t.Helper()
	switch kind {
	case bf16Native:
		if !hasAVX512BF16() {
			t.Skip("this CPU lacks AVX512-BF16 (avx512_bf16 in /proc/cpuinfo): the native kernel cannot run here")
		}
	case bf16AMX:
		if !hasAMX() {
			t.Skip("this CPU lacks AMX-BF16/AMX-TILE/AVX512-BF16, or Linux did not grant the tile state (TestBF16AMXDetect tells which): the AMX kernel cannot run here")
		}
	}
}

// skipUnderRace skips t in the race build (raceEnabled says why).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("under -race: one goroutine calling C micro-kernels, which the race detector cannot see into; test-unit runs this test")
	}
}

// bf16GEMMShapes cross every block edge (BMC = 48 rows, BNC = 256 columns,
// NKC = 2048 k a pass, BKC = 256 k a pre-packed slot, odd k), the native
// kernel's tiles of 6×64 (two panels of 32: a lone last panel, a partial
// second one) and the AMX kernel's of 32×32 in 16×16 tiles and 32 k:
// edges of 1–15 and 17–31 rows and columns, k short of, at and past a
// multiple of 32, whole tiles with beta 1 (C loaded into the AMX
// accumulators).
var bf16GEMMShapes = [][3]int{{1, 1, 1}, {13, 33, 3}, {97, 40, 1025}, {12, 1030, 514}, {100, 1100, 7}, {30, 70, 600},
	{64, 64, 32}, {48, 80, 289}, {33, 17, 31}, {128, 96, 512}, {50, 300, 2051}, {7, 65, 4099}}

// TestBF16GEMMBlocks checks the bfloat16 GEMM directly on bf16GEMMShapes,
// with leading dimensions wider than the matrices and beta 0 (NaN in C
// ignored) and 1, against float64 sums of the rounded operands; with the
// AVX2 conversion and packing (where the CPU has AVX2) and without, leading
// dimensions of B odd (tB then packs word by word) and even. Every
// micro-kernel: the native and AMX ones skip (saying so) where the CPU
// lacks them.
func TestBF16GEMMBlocks(t *testing.T) {
	skipUnderRace(t)
	fasts := []bool{false}
	if bf16GEMMFastOK() {
		fasts = append(fasts, true)
	}
	for _, kind := range []bf16Kind{bf16Portable, bf16Native, bf16AMX} {
		t.Run("kind="+bf16KindNames[kind], func(t *testing.T) {
			needBF16Kind(t, kind)
			for _, fast := range fasts {
				g := bf16GEMMWith(kind, fast)
				for _, sh := range bf16GEMMShapes {
					m, n, k := sh[0], sh[1], sh[2]
					for _, tB := range []bool{false, true} {
						for _, beta := range []float32{0, 1} {
							name := fmt.Sprintf("fast=%v,m=%d,n=%d,k=%d,tB=%v,beta=%g", fast, m, n, k, tB, beta)
							t.Run(name, func(t *testing.T) { checkBGEMM(t, g, m, n, k, tB, beta) })
						}
					}
				}
			}
		})
	}
}

// TestBF16GEMMSharedOperands checks the forms the backend's split products
// use, on every micro-kernel: op(B) pre-packed once (bprepackPanels, in two
// ranges of panels) for bgemmPre, and A rounded once in the kernel's layout
// (bf16A16Layout, the padding rows zeroed as bgemmRun does) for bgemmA16.
func TestBF16GEMMSharedOperands(t *testing.T) {
	skipUnderRace(t)
	for _, kind := range []bf16Kind{bf16Portable, bf16Native, bf16AMX} {
		t.Run("kind="+bf16KindNames[kind], func(t *testing.T) {
			needBF16Kind(t, kind)
			for _, sh := range bf16GEMMShapes {
				m, n, k := sh[0], sh[1], sh[2]
				for _, tB := range []bool{false, true} {
					for _, beta := range []float32{0, 1} {
						name := fmt.Sprintf("m=%d,n=%d,k=%d,tB=%v,beta=%g", m, n, k, tB, beta)
						t.Run("pre,"+name, func(t *testing.T) {
							checkBGEMM(t, func(tB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
								pre := make([]uint32, bprepackWords(n, k))
								for i := range pre {
									pre[i] = 0x7fc07fc0 // NaN pairs: the kernel must read only what was packed
								}
								panels := (n + bprepackPanel - 1) / bprepackPanel
								bprepackPanels(pre, b, ldb, tB, n, k, 0, panels/2)
								bprepackPanels(pre, b, ldb, tB, n, k, panels/2, panels)
								bgemmPre(kind, m, n, k, a, lda, pre, beta, c, ldc)
							}, m, n, k, tB, beta)
						})
						t.Run("a16,"+name, func(t *testing.T) {
							checkBGEMM(t, func(tB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
								ld16, rows := bf16A16Layout(kind, m, k)
								if ld16 < (k+1)&^1 || rows < m {
									t.Fatalf("layout ld16 %d rows %d for m %d k %d", ld16, rows, m, k)
								}
								a16 := make([]uint16, rows*ld16)
								for i := range a16 {
									a16[i] = 0x7fc0 // NaN: the rounding must write every padding column
								}
								clear(a16[m*ld16:])
								bf16RoundRowsPad(a16, ld16, a, lda, m, k)
								bgemmA16(kind, tB, m, n, k, a16, ld16, b, ldb, beta, c, ldc)
							}, m, n, k, tB, beta)
						})
					}
				}
			}
		})
	}
}

// TestBF16AMXDetect: hasAMX agrees with the flags Linux shows for this CPU
// (amx_tile, amx_bf16 and avx512_bf16 in /proc/cpuinfo): a CPU that has them
// must get the AMX kernel (the tile-state request granted), one that lacks
// them must not.
func TestBF16AMXDetect(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo to compare with: %v", err)
	}
	var flags []string
	for line := range strings.Lines(string(info)) {
		if name, val, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			flags = strings.Fields(val)
			break
		}
	}
	has := slices.Contains(flags, "amx_tile") && slices.Contains(flags, "amx_bf16") && slices.Contains(flags, "avx512_bf16")
	t.Logf("/proc/cpuinfo: amx_tile, amx_bf16 and avx512_bf16 %v; hasAMX %v", has, hasAMX())
	if has != hasAMX() {
		t.Fatalf("hasAMX() = %v, but /proc/cpuinfo says the CPU has AMX-TILE, AMX-BF16 and AVX512-BF16: %v (on such a CPU a false hasAMX means arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed)", hasAMX(), has)
	}
	if !has {
		t.Skip("this CPU lacks AMX-BF16: detection agrees, nothing more to check here")
	}
}

func checkBGEMM(t *testing.T, g bgemmFunc, m, n, k int, tB bool, beta float32) {
	r := rand.New(rand.NewPCG(uint64(m*n), uint64(k)))
	lda, ldc := k+3, n+5
	ldb, rowsB := k+2, n // tB: b [n, k]
	if !tB {
		ldb, rowsB = n+2, k // b [k, n]
	}
	a := make([]float32, m*lda)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	b := make([]uint16, rowsB*ldb)
	for i := range b {
		b[i] = kernels.BF16(float32(r.NormFloat64()))
	}
	c := make([]float32, m*ldc)
	for i := range c {
		c[i] = float32(r.NormFloat64())
		if beta == 0 {
			c[i] = float32(math.NaN())
		}
	}
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				at := p*ldb + j
				if tB {
					at = j*ldb + p
				}
				bv := b[at]
				s += float64(kernels.F32(kernels.BF16(a[i*lda+p]))) * float64(kernels.F32(bv))
			}
			if beta != 0 {
				s += float64(c[i*ldc+j])
			}
			want[i*n+j] = s
		}
	}
	pad := c[m*ldc-ldc+n:] // past the last row's n columns: must stay untouched
	padWas := append([]float32(nil), pad...)
	g(tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			got, w := float64(c[i*ldc+j]), want[i*n+j]
			if e := math.Abs(got - w); !(e <= 1e-5*math.Sqrt(float64(k))*(1+math.Abs(w))) {
				t.Fatalf("c[%d,%d] = %g, want %g", i, j, got, w)
			}
		}
	}
	for i := range pad {
		if math.Float32bits(pad[i]) != math.Float32bits(padWas[i]) {
			t.Fatalf("wrote past column %d of the last row", n)
		}
	}
}

// TestBF16Round: the GEMM's rounding of A, scalar and AVX2, is kernels.BF16
// bit for bit, ties to even, NaN, infinities, the largest float (to Inf),
// denormals and signed zeros included.
func TestBF16Round(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40, -3e-39,
		math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), math.Float32frombits(0x3f80ffff),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xff800001), math.Float32frombits(0x7f7f8000)}
	r := rand.New(rand.NewPCG(1, 2))
	for len(vals) < 45 { // 45: eight-wide blocks and a scalar tail, odd length
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	fasts := []bool{false}
	if bf16GEMMFastOK() {
		fasts = append(fasts, true)
	}
	for _, fast := range fasts {
		dst := make([]uint16, len(vals)+1)
		dst[len(vals)] = 0xffff
		bf16RoundRow(dst, vals, fast)
		for i, v := range vals {
			if want := kernels.BF16(v); dst[i] != want {
				t.Errorf("fast=%v: %g (%#08x) rounds to %#04x, want %#04x", fast, v, math.Float32bits(v), dst[i], want)
			}
		}
		if dst[len(vals)] != 0 {
			t.Errorf("fast=%v: padding %#04x, want 0", fast, dst[len(vals)])
		}
	}
}

// TestBF16RowsKernel checks the decode kernel against float64 sums on
// shapes off its 4-row × 6-input tiles and its 32-wide k steps, the output
// rows strided (ldo > rows); the native kernel too where the CPU has it.
func TestBF16RowsKernel(t *testing.T) {
	kinds := []bool{false}
	if hasAVX512BF16() {
		kinds = append(kinds, true)
	} else {
		t.Log("this CPU lacks AVX512-BF16: the native decode kernel is not checked")
	}
	for _, native := range kinds {
		k := bf16RowsKernel(native)
		for _, sh := range [][3]int{{1, 1, 1}, {7, 31, 5}, {8, 32, 4}, {13, 33, 9}, {64, 100, 17}, {6, 896, 12}} {
			N, C, rows := sh[0], sh[1], sh[2]
			t.Run(fmt.Sprintf("native=%v,N=%d,C=%d,rows=%d", native, N, C, rows), func(t *testing.T) {
				checkDecodeRows(t, N, C, rows, func(out []float32, ldo int, a16 []uint16, _ []uint32, w []uint16) {
					k(out, ldo, a16, N, C, w)
				})
			})
		}
	}
}

// The bf16 GEMM's overheads outside the micro-kernel, on the 0.5B MLP
// shape (x [2048, 896], W [4864, 896]): rounding A, packing all of B as a
// linear layer's forward (tB) and backward (!tB) read it. They run on any
// CPU; compare them with the product's 8.9 G multiply-adds.
//
//	go test ./kernels/cpu -run - -bench BF16Overhead
func BenchmarkBF16OverheadRoundA(b *testing.B) {
	const m, k = 2048, 896
	a := make([]float32, m*k)
	for i := range a {
		a[i] = float32(i%97) * 0.01
	}
	dst := make([]uint16, m*k)
	b.SetBytes(4 * m * k)
	for b.Loop() {
		bf16RoundRowsPad(dst, k, a, k, m, k)
	}
}

func BenchmarkBF16OverheadPackB(b *testing.B) {
	const n, k = 4864, 896
	w := make([]uint16, n*k)
	for i := range w {
		w[i] = 0x3f80 + uint16(i%13)
	}
	for _, tB := range []bool{true, false} {
		b.Run(fmt.Sprintf("tB=%v", tB), func(b *testing.B) {
			nn, kk, ldb := n, k, k // forward: op(W) = Wᵀ [896, 4864]: k = 896, n = 4864
			if !tB {
				nn, kk, ldb = k, n, k // backward: op(W) = W [4864, 896]: k = 4864, n = 896
			}
			pre := make([]uint32, bprepackWords(nn, kk))
			panels := (nn + bprepackPanel - 1) / bprepackPanel
			b.SetBytes(2 * n * k)
			for b.Loop() {
				bprepackPanels(pre, w, ldb, tB, nn, kk, 0, panels)
			}
		})
	}
}

// TestPickBF16 checks the micro-kernel Options.BF16Kernel picks for what a
// CPU offers: "" the best (AMX, else AVX512-BF16, else NoBF16Error), a
// named kernel only where the CPU has it.
func TestPickBF16(t *testing.T) {
	for _, c := range []struct {
		kernel string
		f      features
		want   bf16Kind
		suffix string
		err    string
	}{
		{"", features{bf16: true, amx: true}, bf16AMX, "+bf16amx", ""},
		{"", features{bf16: true}, bf16Native, "+bf16", ""},
		{"", features{}, 0, "", "needs a CPU with AVX512-BF16"},
		{"avx512bf16", features{bf16: true, amx: true}, bf16Native, "+bf16", ""},
		{"avx512bf16", features{}, 0, "", "needs a CPU with AVX512-BF16"},
		{"amx", features{bf16: true, amx: true}, bf16AMX, "+bf16amx", ""},
		{"amx", features{bf16: true}, 0, "", "needs a CPU with AMX-TILE"},
		{"portable", features{}, bf16Portable, "+bf16portable", ""},
		{"avx2", features{bf16: true, amx: true}, 0, "", "unknown bfloat16 kernel"},
	} {
		g, rows, kind, suffix, err := pickBF16(kernels.PrecisionBF16, c.kernel, c.f)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("kernel %q on %+v: error %v, want one containing %q", c.kernel, c.f, err, c.err)
			}
			continue
		}
		if err != nil || g == nil || rows == nil || kind != c.want || suffix != c.suffix {
			t.Errorf("kernel %q on %+v: kind %v suffix %q err %v (GEMM set %v, rows set %v), want kind %v suffix %q",
				c.kernel, c.f, kind, suffix, err, g != nil, rows != nil, c.want, c.suffix)
		}
	}
}

// BenchmarkBF16GEMM times one call of each GEMM on one core, on the 0.5B MLP
// shape x[T,896]·W[4864,896]ᵀ (forward: tB, k = 896) and dx[T,896] +=
// dout[T,4864]·W (backward: !tB, k = 4864), W bfloat16: the AMX and
// AVX512-BF16 micro-kernels (skipped, saying so, where the CPU lacks them),
// and float32 compute as the f32 mode runs it — the built-in AVX-512 GEMM
// widening W as it packs (AVX-512F CPUs), and OpenBLAS on a float32 copy of
// W (set OPENBLAS_NUM_THREADS=1 for one core). Each reports GFLOP/s.
//
//	go test ./kernels/cpu -run - -bench BF16GEMM -benchtime 3x
func BenchmarkBF16GEMM(b *testing.B) {
	const C, I = 896, 4864
	r := rand.New(rand.NewPCG(3, 4))
	w := make([]uint16, I*C)
	w32 := make([]float32, I*C)
	for i := range w {
		w[i] = kernels.BF16(float32(r.NormFloat64()) * 0.05)
		w32[i] = kernels.F32(w[i])
	}
	g32, g16 := avx512GEMM()
	blas := openblasGEMM()
	for _, T := range []int{256, 2048} {
		x := make([]float32, T*I)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		c := make([]float32, T*I)
		for _, fwd := range []bool{true, false} {
			m, n, k := T, I, C // forward: c [T, 4864] = x [T, 896]·Wᵀ
			dir := "forward"
			if !fwd {
				n, k, dir = C, I, "backward" // c [T, 896] += x [T, 4864]·W
			}
			beta := float32(0)
			if !fwd {
				beta = 1
			}
			for _, kern := range []string{"amx", "avx512bf16", "f32-avx512", "f32-openblas"} {
				b.Run(fmt.Sprintf("T=%d/%s/%s", T, dir, kern), func(b *testing.B) {
					var call func()
					switch kern {
					case "amx", "avx512bf16":
						kind := bf16AMX
						if kern == "avx512bf16" {
							kind = bf16Native
						}
						needBF16Kind(b, kind)
						g := bf16GEMM(kind)
						call = func() { g(fwd, m, n, k, x, k, w, C, beta, c, n) }
					case "f32-avx512":
						if !hasAVX512() || g32 == nil {
							b.Skip("this CPU lacks AVX-512F: no built-in float32 GEMM")
						}
						call = func() { g16(false, fwd, m, n, k, 1, x, k, w, C, beta, c, n) }
					case "f32-openblas":
						if blas == nil {
							b.Skip("no OpenBLAS in this build")
						}
						call = func() { blas(false, fwd, m, n, k, 1, x, k, w32, C, beta, c, n) }
					}
					call() // warm: buffers, pages, tile state
					b.ResetTimer()
					for b.Loop() {
						call()
					}
					b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// TestBF16AMXRows checks the AMX decode kernel (the weight read in place as
// A tiles, the rounded activation packed as B panels) against float64 sums,
// on inputs and rows off its 32 × 32 tiles, the output rows strided; it
// skips (saying so) where the CPU lacks AMX. Widths not a multiple of 32
// are refused.
func TestBF16AMXRows(t *testing.T) {
	for _, C := range []int{0, 1, 31, 48, 900} {
		if bf16AMXRowsOK(C) {
			t.Errorf("bf16AMXRowsOK(%d) = true, want false", C)
		}
	}
	needBF16Kind(t, bf16AMX)
	for _, sh := range [][3]int{{1, 32, 1}, {8, 896, 100}, {33, 64, 70}, {64, 896, 32}, {13, 4864, 45}, {40, 96, 31}} {
		N, C, rows := sh[0], sh[1], sh[2]
		t.Run(fmt.Sprintf("N=%d,C=%d,rows=%d", N, C, rows), func(t *testing.T) {
			if !bf16AMXRowsOK(C) {
				t.Fatalf("bf16AMXRowsOK(%d) = false", C)
			}
			checkDecodeRows(t, N, C, rows, func(out []float32, ldo int, _ []uint16, xp []uint32, w []uint16) {
				bf16AMXRows(out, ldo, xp, N, C, w)
			})
		})
	}
}

// TestBF16PanelRows checks the panel decode kernel (the weight rows read in
// place as the broadcast side, the rounded inputs packed as 32-wide B
// panels) against float64 sums, with the portable tile and, where the CPU
// has AVX512-BF16, the native one: inputs short of, at and past a panel,
// weight rows short of, at and past a 12-row tile, widths across a
// pre-packed slot (256), the output rows strided. Odd widths are refused.
func TestBF16PanelRows(t *testing.T) {
	for _, C := range []int{0, -2, 1, 31, 897} {
		if bf16PanelRowsOK(C) {
			t.Errorf("bf16PanelRowsOK(%d) = true, want false", C)
		}
	}
	for _, kind := range []bf16Kind{bf16Portable, bf16Native} {
		t.Run("kind="+bf16KindNames[kind], func(t *testing.T) {
			needBF16Kind(t, kind)
			for _, sh := range [][3]int{{1, 2, 1}, {24, 896, 100}, {32, 258, 12}, {33, 64, 13}, {64, 896, 35}, {40, 4864, 25}, {17, 514, 11}} {
				N, C, rows := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("N=%d,C=%d,rows=%d", N, C, rows), func(t *testing.T) {
					if !bf16PanelRowsOK(C) {
						t.Fatalf("bf16PanelRowsOK(%d) = false", C)
					}
					checkDecodeRows(t, N, C, rows, func(out []float32, ldo int, _ []uint16, xp []uint32, w []uint16) {
						bf16PanelRows(kind == bf16Native, out, ldo, xp, N, C, w)
					})
				})
			}
		})
	}
}

// BenchmarkBF16Rows times the decode kernels on one core, on the MLP's
// up/gate weight W [4864, 896] and N = 8 to 64 inputs (already rounded; the
// packing of them included for the kernels that take them packed): AMX
// (the weight as A tiles), AVX512-BF16's panel kernel (12 weight rows
// broadcast against 32 inputs) and its dot-product one (4 × 6 tiles), each
// skipped where the CPU lacks it. Each reports GFLOP/s.
//
//	go test ./kernels/cpu -run - -bench BF16Rows -benchtime 20x
func BenchmarkBF16Rows(b *testing.B) {
	const C, I = 896, 4864
	r := rand.New(rand.NewPCG(5, 6))
	w := make([]uint16, I*C)
	for i := range w {
		w[i] = kernels.BF16(float32(r.NormFloat64()) * 0.05)
	}
	for _, N := range []int{8, 16, 24, 32, 48, 64} {
		x := make([]float32, N*C)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		a16 := make([]uint16, N*C)
		bf16RoundRows(a16, x, N, C)
		out := make([]float32, N*I)
		for _, kern := range []string{"amx", "avx512bf16-panel", "avx512bf16"} {
			b.Run(fmt.Sprintf("N=%d/%s", N, kern), func(b *testing.B) {
				var call func()
				switch kern {
				case "amx", "avx512bf16-panel":
					kind := bf16AMX
					if kern != "amx" {
						kind = bf16Native
					}
					needBF16Kind(b, kind)
					xp := make([]uint32, bprepackWords(N, C))
					call = func() {
						bprepackPanels(xp, a16, C, true, N, C, 0, (N+bprepackPanel-1)/bprepackPanel)
						if kind == bf16AMX {
							bf16AMXRows(out, I, xp, N, C, w)
						} else {
							bf16PanelRows(true, out, I, xp, N, C, w)
						}
					}
				default:
					needBF16Kind(b, bf16Native)
					k := bf16RowsKernel(true)
					call = func() { k(out, I, a16, N, C, w) }
				}
				call()
				b.ResetTimer()
				for b.Loop() {
					call()
				}
				b.ReportMetric(2*float64(N)*C*I*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// checkDecodeRows runs a decode kernel on random x [N, C] and w [rows, C],
// given x rounded (a16 [N, C]) and packed as B panels (xp, for the kernels
// that take it so: bf16AMXRows, bf16PanelRows), into output rows strided
// past rows, and checks it with checkRowsOut.
func checkDecodeRows(t *testing.T, N, C, rows int, kernel func(out []float32, ldo int, a16 []uint16, xp []uint32, w []uint16)) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(N), uint64(C*rows)))
	x := make([]float32, N*C)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	w := make([]uint16, rows*C)
	for i := range w {
		w[i] = kernels.BF16(float32(r.NormFloat64()))
	}
	a16 := make([]uint16, N*C)
	bf16RoundRows(a16, x, N, C)
	xp := make([]uint32, bprepackWords(N, C))
	bprepackPanels(xp, a16, C, true, N, C, 0, (N+bprepackPanel-1)/bprepackPanel)
	ldo := rows + 3
	out := make([]float32, N*ldo)
	for i := range out {
		out[i] = -7
	}
	kernel(out, ldo, a16, xp, w)
	checkRowsOut(t, out, ldo, x, w, N, C, rows)
}

// checkRowsOut checks a decode kernel's out [N, ldo] (filled with -7
// before the call): column o < rows is x[n]·w[o] on x rounded to bfloat16,
// in float64, within 1e-5·√C relative; the columns past rows are untouched.
func checkRowsOut(t *testing.T, out []float32, ldo int, x []float32, w []uint16, N, C, rows int) {
	t.Helper()
	for n := 0; n < N; n++ {
		for o := 0; o < ldo; o++ {
			got := float64(out[n*ldo+o])
			if o >= rows {
				if got != -7 {
					t.Fatalf("out[%d, %d] (past the rows) = %g, want untouched", n, o, got)
				}
				continue
			}
			var want float64
			for c := 0; c < C; c++ {
				want += float64(kernels.F32(kernels.BF16(x[n*C+c]))) * float64(kernels.F32(w[o*C+c]))
			}
			if e := math.Abs(got - want); !(e <= 1e-5*math.Sqrt(float64(C))*(1+math.Abs(want))) {
				t.Fatalf("out[%d, %d] = %g, want %g", n, o, got, want)
			}
		}
	}
}
