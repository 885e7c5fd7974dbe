package constrain

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestExactDecimalBounds: minimum and maximum compare exact decimals, as
// JSON Schema does. They were float64s, so 6.0000000000000003 (whose
// float64 is 6) passed a maximum of 6, 0.10000000000000001 failed an
// exclusiveMinimum of 0.1, and 9007199254740992 passed a minimum of
// 9007199254740993 (whose float64 is …992). Bounds past float64's range
// or below its precision compile, and keep their side of 0.
func TestExactDecimalBounds(t *testing.T) {
	for _, c := range []struct {
		schema string
		docs   map[string]bool
	}{
		{`{"type":"number","maximum":6}`, map[string]bool{"6": true, "6.0000000000000003": false, "6.0000000000000000001": false, "5.9999999999999999": true, "6.000000000000000000": true}},
		{`{"type":"number","exclusiveMinimum":0.1}`, map[string]bool{"0.1": false, "0.10000000000000000": false, "0.10000000000000001": true, "0.2": true}},
		{`{"type":"integer","minimum":9007199254740993}`, map[string]bool{"9007199254740992": false, "9007199254740993": true}},
		{`{"type":"integer","exclusiveMaximum":-9007199254740993}`, map[string]bool{"-9007199254740993": false, "-9007199254740994": true}},
		{`{"type":"number","minimum":1e-400}`, map[string]bool{"0": false, "0.0": false, "0.0000000000000000000001": true}},
		{`{"type":"number","maximum":-1e-400}`, map[string]bool{"0": false, "-0.000000000000000000001": true}},
		{`{"type":"number","minimum":-1e400,"maximum":1e400}`, map[string]bool{"-99999999999999999999999": true, "99999999999999999999999": true}},
	} {
		s := compileT(t, c.schema)
		for doc, want := range c.docs {
			if got := accepts(s, doc); got != want {
				t.Errorf("%s: %s accepted %v, want %v", c.schema, doc, got, want)
			}
		}
	}
}

// TestExactBoundWalks: random walks under a maximum of 6 (the byte-level
// vocabulary leans on "6" and "0") end in a number that is exactly at
// most 6, with no dead end on the way.
func TestExactBoundWalks(t *testing.T) {
	s := compileT(t, `{"type":"number","minimum":5.99,"maximum":6}`)
	v := byteVocab{extra: []string{"6", "0", "00000", ".0000000", "3", "1"}}
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 21))
		out, _, done := walkTokens(NewJSON(v, []int32{eosID}, s).WithMaxTokens(30), v, rng, 30)
		if !done {
			t.Fatalf("seed %d: no end: %q", seed, out)
		}
		r, ok := new(big.Rat).SetString(out)
		if !ok || r.Cmp(big.NewRat(6, 1)) > 0 || r.Cmp(big.NewRat(599, 100)) < 0 {
			t.Fatalf("seed %d: %q is not within [5.99, 6]", seed, out)
		}
	}
}
