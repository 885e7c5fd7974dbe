//go:build race

package cpu

// raceEnabled skips, under -race, the tests that call the C micro-kernels
// directly from one goroutine (TestBF16GEMMBlocks,
// TestBF16GEMMSharedOperands): the race detector cannot see into C and the
// test runs no goroutines, so the race build checks nothing extra there
// while its Go reference loops run ten times slower (84 s of the package's
// 126 s under -race). make test's test-unit runs them.
const raceEnabled = true
