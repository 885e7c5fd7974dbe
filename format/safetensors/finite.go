package safetensors

import (
	"errors"
	"fmt"
	"math"
)

// ErrNonFinite is matched by CheckFinite's errors: a NaN or infinite
// value where every reader (a trainer, a server) needs finite numbers.
var ErrNonFinite = errors.New("not a finite number (left by a diverged training step or a corrupt copy)")

// FirstNonFinite returns the index of the first NaN or infinity in vals,
// or −1 when every value is finite.
func FirstNonFinite(vals []float32) int {
	for i, v := range vals {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	return -1
}

// CheckFinite fails when vals, the elements of tensor name from element
// off on (a chunk of a larger tensor has off > 0), hold a NaN or an
// infinity, naming the tensor, the value and its element in the whole
// tensor, so a reader can tell which file position to look at.
func CheckFinite(name string, vals []float32, off int) error {
	if i := FirstNonFinite(vals); i >= 0 {
		return fmt.Errorf("tensor %q holds %v at element %d: %w", name, vals[i], off+i, ErrNonFinite)
	}
	return nil
}
