package constrain

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The property test below checks the constraint against an independent
// JSON Schema validator (santhosh-tekuri/jsonschema, draft 2020-12), on
// schemas drawn at random from the keywords Compile accepts: whatever a
// random walk finishes must validate, so a keyword that Compile takes but
// the recogniser ignores shows up as an invalid document.

// randLiteral is a random JSON value for enum and const.
func randLiteral(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(9); {
	case k < 3:
		return []string{"", "a", "ab", "abcd", "é", "éé", "x\"y", "😀"}[rng.IntN(8)]
	case k < 5:
		return []any{0, 1, -3, 12, 2.5, -0.5, 100}[rng.IntN(7)]
	case k == 5:
		return rng.IntN(2) == 0
	case k == 6:
		return nil
	case k == 7 && depth < 2:
		return []any{randLiteral(rng, depth+1), randLiteral(rng, depth+1)}[:rng.IntN(3)]
	case depth < 2:
		return map[string]any{"a": randLiteral(rng, depth+1)}
	}
	return "z"
}

// randBound is a small bound, sometimes fractional: a half, or tenths,
// which float64 holds inexactly (0.2+0.1 is above 0.3 in float64).
func randBound(rng *rand.Rand) float64 {
	v := float64(rng.IntN(41) - 20)
	switch rng.IntN(4) {
	case 0:
		v += 0.5
	case 1:
		v = float64(rng.IntN(41)-20) / 10
	}
	return v
}

// randRange adds some of minimum, maximum and their exclusive forms, low
// below high so that some number fits.
func randRange(rng *rand.Rand, s map[string]any) {
	lo, hi := randBound(rng), randBound(rng)
	if lo > hi {
		lo, hi = hi, lo
	}
	hi += 2
	switch rng.IntN(4) {
	case 0:
		s["minimum"] = lo
	case 1:
		s["exclusiveMaximum"] = hi
	case 2:
		s["minimum"], s["maximum"] = lo, hi
	case 3:
		s["exclusiveMinimum"], s["maximum"] = lo, hi
	}
}

// randSchema is a random schema of the keywords Compile accepts.
func randSchema(rng *rand.Rand, depth int) map[string]any {
	n := 12
	if depth >= 3 {
		n = 5 // scalars only
	}
	s := map[string]any{}
	switch rng.IntN(n) {
	case 0:
		s["type"] = "string"
		if rng.IntN(2) == 0 {
			s["minLength"] = rng.IntN(4)
		}
		if rng.IntN(2) == 0 {
			s["maxLength"] = rng.IntN(3) + 3
		}
	case 1:
		s["type"] = "integer"
		randRange(rng, s)
	case 2:
		s["type"] = "number"
		if rng.IntN(3) > 0 {
			randRange(rng, s)
		}
	case 3:
		s["type"] = []string{"boolean", "null"}[rng.IntN(2)]
	case 4, 5:
		var lits []any
		for range rng.IntN(4) + 1 {
			lits = append(lits, randLiteral(rng, 0))
		}
		if rng.IntN(2) == 0 {
			s["enum"] = lits
		} else {
			s["const"] = lits[0]
		}
		// Keywords beside enum and const apply too.
		switch rng.IntN(6) {
		case 0:
			s["type"] = []string{"string", "number", "integer", "array", "object"}[rng.IntN(5)]
		case 1:
			s["minLength"] = 2
		case 2:
			s["maximum"] = 1
		case 3:
			s["maxItems"] = 1
		case 4:
			s["enum"] = lits[rng.IntN(len(lits)):]
		}
	case 6:
		s["type"] = []any{"string", "null"}
		s["maxLength"] = 2
	case 7:
		s["type"] = []any{"integer", "string", "boolean"}
		s["minLength"] = 1
		s["maximum"] = 5
	case 8, 9:
		s["type"] = "array"
		s["items"] = randSchema(rng, depth+1)
		if rng.IntN(2) == 0 {
			s["minItems"] = rng.IntN(3)
		}
		if rng.IntN(2) == 0 {
			s["maxItems"] = rng.IntN(3) + 2
		}
	case 10:
		props, req := map[string]any{}, []string{}
		for i := range rng.IntN(3) + 1 {
			k := fmt.Sprintf("k%d", i)
			props[k] = randSchema(rng, depth+1)
			if rng.IntN(2) == 0 {
				req = append(req, k)
			}
		}
		s["type"], s["properties"], s["required"] = "object", props, req
		if rng.IntN(2) == 0 {
			s["additionalProperties"] = false
		}
	case 11:
		s["type"] = "object"
		s["additionalProperties"] = randSchema(rng, depth+1)
	}
	return s
}

func TestRandomSchemasValidate(t *testing.T) {
	v := multiVocab()
	schemas, docs, refused := 300, 0, 0
	if raceEnabled {
		schemas = 40
	}
	for seed := range schemas {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		raw, err := json.Marshal(randSchema(rng, 0))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Compile(raw)
		if err != nil {
			refused++
			continue
		}
		sch := validatorFor(t, raw)
		for walk := range 6 {
			budget := s.minLen + 1 + rng.IntN(60)
			out, n, done := walkTokens(NewJSON(v, []int32{eosID}, s).WithMaxTokens(budget), v, rng, budget)
			if !done || n > budget {
				t.Fatalf("%s walk %d: budget %d not kept: done %v after %d tokens: %q", raw, walk, budget, done, n, out)
			}
			if err := validates(sch, out); err != nil {
				t.Fatalf("%s walk %d: %v", raw, walk, err)
			}
			docs++
		}
	}
	t.Logf("%d schemas, %d refused, %d documents validated", schemas, refused, docs)
	if refused > schemas/2 {
		t.Fatalf("%d of %d schemas refused: the test checks too little", refused, schemas)
	}
}

// validatorFor compiles raw with the independent validator.
func validatorFor(t testing.TB, raw []byte) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("%s: the validator refuses the schema: %v", raw, err)
	}
	return sch
}

// validates reports why doc is not JSON valid for sch, or nil. Numbers
// are read as float64, as the recogniser compares them: read exactly (the
// validator's own reading), 6.0000000000000003 is above a maximum of 6,
// which the recogniser, whose bounds are float64, lets through.
func validates(sch *jsonschema.Schema, doc string) error {
	var inst any
	if err := json.Unmarshal([]byte(doc), &inst); err != nil {
		return fmt.Errorf("%q is not JSON: %w", doc, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%q does not validate: %w", doc, err)
	}
	return nil
}

// steerWalk drives a random schema's recogniser with data: each byte of
// data picks one of the bytes the state allows (so the fuzzer explores
// documents of the schema, not mostly refused bytes), then the shortest
// completion ends it. At every state it checks that minBytes is exact
// (no byte lowers it by more than one, some byte by exactly one) and that
// a state with nothing allowed is complete. It returns the document.
func steerWalk(t *testing.T, raw []byte, s *Schema, data []byte) string {
	m := newMachine(s)
	var out []byte
	step := func(pick int) bool {
		mb := m.minBytes()
		var ok, down []byte
		for b := range 256 {
			h := m.clone()
			if !h.feed(byte(b)) {
				continue
			}
			ok = append(ok, byte(b))
			switch got := h.minBytes(); {
			case got < mb-1:
				t.Fatalf("%s after %q: byte %q lowers minBytes from %d to %d", raw, out, byte(b), mb, got)
			case got == mb-1:
				down = append(down, byte(b))
			}
		}
		if mb > 0 && len(down) == 0 {
			t.Fatalf("%s after %q: minBytes %d but no byte lowers it", raw, out, mb)
		}
		if (mb == 0) != m.complete() {
			t.Fatalf("%s after %q: minBytes %d, complete %v", raw, out, mb, m.complete())
		}
		next := ok
		if pick < 0 {
			next = down
		}
		if len(next) == 0 {
			return false
		}
		b := next[max(pick, 0)%len(next)]
		if !m.feed(b) {
			t.Fatalf("%s after %q: allowed byte %q refused", raw, out, b)
		}
		out = append(out, b)
		return true
	}
	for _, d := range data {
		if !step(int(d)) {
			break
		}
	}
	for n := m.minBytes(); n > 0; n-- {
		step(-1)
	}
	if !m.complete() {
		t.Fatalf("%s: the shortest completion leaves %q open", raw, out)
	}
	return string(out)
}
