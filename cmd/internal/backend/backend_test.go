package backend

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
)

// TestLtAutotuneEnv: HONE_CUDA_LT_AUTOTUNE unset, off, 0 and 1 leave the
// autotune off (1 candidate: a bit-identical resume), on times
// cuda.LtAutotuneCandidates, a count sets it, anything else is refused
// naming the variable.
func TestLtAutotuneEnv(t *testing.T) {
	for v, want := range map[string]int{"": 1, "off": 1, "on": cuda.LtAutotuneCandidates, "0": 1, "1": 1, "4": 4, "16": 16} {
		if n, err := ltAutotune(v); err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"yes", "-2", "8x"} {
		if _, err := ltAutotune(v); err == nil || !strings.Contains(err.Error(), LtAutotuneEnv) {
			t.Errorf("%q: %v, want an error naming %s", v, err, LtAutotuneEnv)
		}
	}
}
