package constrain

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRangedMaskAllocs: Mask where a number with minimum/maximum begins
// (the judge's score) allocates about as little as elsewhere. The exact
// decimal bounds were tested with big.Rats on every byte of every token
// tried: 450000 allocations and 30 times the time of a Mask over a
// 150k-token vocabulary, for every judge answer's every score.
func TestRangedMaskAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := []byte(`0123456789.-,}]"a`)
	var extra []string
	for len(extra) < 3000 {
		tok := make([]byte, 1+rng.IntN(6))
		for i := range tok {
			tok[i] = alphabet[rng.IntN(len(alphabet))]
		}
		extra = append(extra, string(tok))
	}
	v := bigVocab{extra: extra}
	x := NewIndex(v)
	s := compileT(t, judgeSchema)
	for _, prefix := range []string{
		`{"scores":[{"trajectory_id":"a","explanation":"b","score":`,
		`{"scores":[{"trajectory_id":"a","explanation":"b","score":0.`,
	} {
		j := NewJSON(x, []int32{int32(v.VocabSize() - 1)}, s).WithMaxTokens(500)
		for _, ch := range []byte(prefix) {
			if !j.m.feed(ch) {
				t.Fatalf("%q refused", prefix)
			}
		}
		logits := make([]float32, v.VocabSize())
		allocs := testing.AllocsPerRun(3, func() {
			for i := range logits {
				logits[i] = 0
			}
			j.Mask(logits)
		})
		if allocs > 300 {
			t.Errorf("after %q: %.0f allocations a Mask, want few (the tokens tried: %d)", prefix, allocs, v.VocabSize())
		}
	}
}

// TestFastBoundsAgree: the float64 tests answer, when they are sure, as
// the exact ones do, for bounds near the texts tried (ties, the last of 20
// digits, exclusive or not) and far from them.
func TestFastBoundsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	number := func() string {
		n := ""
		if rng.IntN(2) == 0 {
			n = "-"
		}
		n += fmt.Sprint(rng.IntN(3))
		if rng.IntN(3) > 0 {
			n += "." + digits(1+rng.IntN(20))
		}
		return n
	}
	sure := 0
	for range 400 {
		lo, hi := number(), number()
		keys := []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
		k1, k2 := keys[rng.IntN(4)], keys[rng.IntN(4)]
		schema := fmt.Sprintf(`{"type":"number",%q:%s}`, k1, lo)
		if k1[len(k1)-3:] != k2[len(k2)-3:] && rng.IntN(2) == 0 {
			schema = fmt.Sprintf(`{"type":"number",%q:%s,%q:%s}`, k1, lo, k2, hi)
		}
		s, err := Compile([]byte(schema))
		if err != nil {
			continue
		}
		// Texts near the bound: its own, cut short, with a digit changed.
		texts := []string{lo, hi, number(), number()}
		if len(lo) > 3 {
			texts = append(texts, lo[:len(lo)-1], lo[:len(lo)-1]+string(byte('0'+rng.IntN(10))))
		}
		for _, text := range texts {
			st := s.Start().m
			for i := range len(text) {
				if !st.feed(text[i]) {
					break
				}
				f := &st.stack[len(st.stack)-1]
				if f.kind != fNumber {
					break
				}
				for room := range maxNumberBytes - f.i + 1 {
					if ok, yes := feasibleFast(s, f.num[:f.i], f.st, room); yes {
						sure++
						if exact := feasibleExact(s, f.num[:f.i], f.st, room); ok != exact {
							t.Fatalf("%s, %q, room %d: fast %v, exact %v", schema, f.num[:f.i], room, ok, exact)
						}
					}
				}
				if terminal(f.st) {
					if ok, yes := inRangeFast(s, approx(f.num[:f.i])); yes {
						if exact := inRange(s, decimal(string(f.num[:f.i]))); ok != exact {
							t.Fatalf("%s, %q: in range fast %v, exact %v", schema, f.num[:f.i], ok, exact)
						}
					}
				}
			}
		}
	}
	if sure < 1000 {
		t.Fatalf("the fast test was sure only %d times", sure)
	}
}
