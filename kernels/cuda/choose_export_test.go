package cuda

import "github.com/hone-rl/hone/kernels"

// ChooseChunks is ChooseRows' chunk length and chunks a row (chooseChunks),
// for the tests that place ties, −Inf and NaN at its chunk boundaries.
var ChooseChunks = chooseChunks

// ChooseRowsChunked is ChooseRows with rows cut into chunks of L entries
// instead of ChooseChunks' (L ≥ V: one block a row, the geometry before
// rows were split).
func (b *Backend) ChooseRowsChunked(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64, L int) {
	b.chooseRows(dst, logits, V, rows, invTemp, u, L)
}
