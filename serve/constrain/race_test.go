//go:build race

package constrain

// raceEnabled shrinks the property tests under -race: the package runs no
// goroutines, so the race build checks nothing extra and is ~10x slower.
const raceEnabled = true
