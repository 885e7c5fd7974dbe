package constrain

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestNestingBound: objects and arrays nest at most 128 deep (maxDepth), under
// json_object and in a schema's unconstrained values. Nesting was
// unbounded, and every Mask copies the whole stack for each byte and token
// it tries: a model that keeps opening [ made each token dearer than the
// last (190 ms a Mask at depth 16000 with Qwen3's vocabulary, against
// 1.4 ms near the top), so one long answer stalled the batch.
func TestNestingBound(t *testing.T) {
	for _, c := range []struct {
		name   string
		s      *Schema
		prefix string
	}{
		{"json_object", Object(), `{"a":`},
		{"any items", compileT(t, `{"type":"object","properties":{"x":{"type":"array","items":{}}}}`), `{"x":`},
	} {
		m := newMachine(c.s)
		for i := range len(c.prefix) {
			if !m.feed(c.prefix[i]) {
				t.Fatalf("%s: prefix refused", c.name)
			}
		}
		opened := 1
		for ; opened < 1000 && m.feed('['); opened++ {
		}
		if opened != 128 {
			t.Errorf("%s: %d containers open, want at most %d", c.name, opened, 128)
		}
		if len(m.stack) > 2*128+2 {
			t.Errorf("%s: stack of %d frames", c.name, len(m.stack))
		}
		// At the bound, Mask still leaves the way out (a value or ]) and
		// the shortest completion closes the document.
		j := NewJSON(byteVocab{}, []int32{eosID}, c.s)
		j.m = m.clone()
		logits := make([]float32, byteVocab{}.VocabSize())
		j.Mask(logits)
		if !math.IsInf(float64(logits['[']), -1) || !math.IsInf(float64(logits['{']), -1) || math.IsInf(float64(logits[']']), -1) {
			t.Errorf("%s: at the bound [ %v, { %v, ] %v", c.name, logits['['], logits['{'], logits[']'])
		}
		doc := c.prefix + strings.Repeat("[", opened-1)
		for k := m.minBytes(); k > 0; k-- {
			for b := range 256 {
				h := m.clone()
				if h.feed(byte(b)) && h.minBytes() == k-1 {
					m, doc = h, doc+string(rune(b))
					break
				}
			}
		}
		if !m.complete() || !json.Valid([]byte(doc)) {
			t.Errorf("%s: shortest completion %q is no document", c.name, doc)
		}
	}
}
