//go:build !cgo

package cpu

// The bfloat16 GEMM is C: without cgo there is none, and New refuses the
// bf16 compute mode.

func hasAVX512BF16() bool { return false }

func hasAMX() bool { return false }

func bf16A16Layout(kind bf16Kind, m, k int) (ld16, rows int) { return (k + 1) &^ 1, m }

type bgemmFunc func(tB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)

func bf16GEMM(kind bf16Kind) bgemmFunc { return nil }

type bf16RowsFunc func(out []float32, ldo int, a16 []uint16, N, C int, w []uint16)

func bf16RowsKernel(native bool) bf16RowsFunc { return nil }

func bf16RoundRows(dst []uint16, x []float32, N, C int) {}

func bprepackWords(n, k int) int { return 0 }

func bprepackPanels(pre []uint32, b []uint16, ldb int, tB bool, n, k, jp0, jp1 int) {}

const bprepackPanel = 32

const bf16TileCols = 2 * bprepackPanel

func bgemmPre(kind bf16Kind, m, n, k int, a []float32, lda int, pre []uint32, beta float32, c []float32, ldc int) {
}

func bgemmA16(kind bf16Kind, tB bool, m, n, k int, a16 []uint16, ld16 int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
}

func bf16RoundRowsPad(dst []uint16, ld16 int, a []float32, lda, m, k int) {}

func bf16AMXRowsOK(C int) bool { return false }

func bf16AMXRows(out []float32, ldo int, xp []uint32, N, C int, w []uint16) {}

func bf16PanelRowsOK(C int) bool { return false }

func bf16PanelRows(native bool, out []float32, ldo int, xp []uint32, N, C int, w []uint16) {}
