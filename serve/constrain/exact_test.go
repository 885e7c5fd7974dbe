package constrain

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
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

// TestNoDeadEndAtFullLength: a fraction is taken only if the digits left
// to its 24 bytes can bring it within the bounds. Its reach was the next
// value in its last place, open, so under "exclusiveMinimum": 0 the text
// 0.0000000000000000000000 (24 bytes) was taken, though no byte could
// follow it and it is not above 0; the model was left no token
// (constraint_no_token), and MinBytes said 24 for a document that could
// not end.
func TestNoDeadEndAtFullLength(t *testing.T) {
	zeros := "0." + strings.Repeat("0", 22)
	for _, c := range []struct{ schema, text string }{
		{`{"type":"number","exclusiveMinimum":0}`, zeros},
		{`{"type":"number","exclusiveMaximum":0}`, "-" + zeros},
		{`{"type":"number","minimum":0.29999999999999999999999}`, "0.2999999999999999999999"},
		{`{"type":"number","exclusiveMinimum":0.2999999999999999999999}`, "0.2999999999999999999999"},
		{`{"type":"number","exclusiveMaximum":-0.299999999999999999999,"minimum":-1}`, "-0.299999999999999999999"},
	} {
		st := compileT(t, c.schema).Start()
		for i := range len(c.text) {
			next, ok := st.Advance([]byte{c.text[i]})
			if !ok {
				break
			}
			st = next
			mb := st.MinBytes()
			if mb > 0 && !slices.ContainsFunc([]byte("-0123456789."), func(b byte) bool {
				n, ok := st.Advance([]byte{b})
				return ok && n.MinBytes() == mb-1
			}) {
				t.Fatalf("%s: after %q no byte leads to the end (MinBytes %d)", c.schema, c.text[:i+1], mb)
			}
		}
	}
}

// TestMillionDigitBounds: a bound of a million digits compiles, and the
// numbers the recogniser writes compare with it as with its exact value.
// Rat.SetString took 5 seconds over such a text (minutes at the 8 MB body
// limit, quadratic) and then refused it, with the million digits in the
// error.
func TestMillionDigitBounds(t *testing.T) {
	zeros := strings.Repeat("0", 1_000_000)
	for _, c := range []struct {
		schema string
		docs   map[string]bool
	}{
		{`{"type":"number","minimum":0.1` + zeros + `1}`, map[string]bool{"0.1": false, "0.1000000000000000000000": false, "0.1000000000000000000001": true}},
		{`{"type":"number","exclusiveMaximum":0.1` + zeros + `}`, map[string]bool{"0.1": false, "0.0999999999999999999999": true}},
		{`{"type":"number","maximum":-0.0` + zeros + `1}`, map[string]bool{"0": false, "-0.000000000000000000001": true}},
		{`{"type":"integer","exclusiveMinimum":2.` + zeros + `1e+` + zeros + `1}`, map[string]bool{"20": false, "21": true}},
	} {
		s, err := Compile([]byte(c.schema))
		if err != nil {
			t.Fatalf("%.60s…: %.200s", c.schema, err)
		}
		for doc, want := range c.docs {
			if got := accepts(s, doc); got != want {
				t.Errorf("%.60s…: %s accepted %v, want %v", c.schema, doc, got, want)
			}
		}
	}
}

// TestQuotedBoundRefused: a bound written as a JSON string ("5") is no
// number; Compile refuses it naming the keyword (json.Number, which reads
// bounds exactly, takes a quoted number too, so it was taken for 5).
func TestQuotedBoundRefused(t *testing.T) {
	for _, schema := range []string{`{"type":"number","minimum":"5"}`, `{"type":"integer","exclusiveMaximum":"10"}`} {
		_, err := Compile([]byte(schema))
		if err == nil || !strings.Contains(err.Error(), "want a number") {
			t.Errorf("%s: %v, want a refusal naming the bound", schema, err)
		}
	}
}
