package constrain

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// judgeSchema mirrors score/judge.Schema(3) (serve may not import score):
// what RULER asks a judge for, the realistic case of json_schema.
const judgeSchema = `{"type":"object","properties":{"scores":{"type":"array","minItems":3,"maxItems":3,
 "items":{"type":"object","properties":{"trajectory_id":{"type":"string"},
 "explanation":{"type":"string","description":"one or two sentences on how this trajectory did"},
 "score":{"type":"number","minimum":0,"maximum":1}},
 "required":["trajectory_id","explanation","score"],"additionalProperties":false}}},
 "required":["scores"],"additionalProperties":false}`

// checkJudge validates a judge answer the way score/judge.Parse reads it.
func checkJudge(doc string) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		return err
	}
	if len(raw) != 1 || raw["scores"] == nil {
		return fmt.Errorf("keys %v", raw)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw["scores"], &items); err != nil {
		return err
	}
	if len(items) != 3 {
		return fmt.Errorf("%d scores, want 3", len(items))
	}
	for _, it := range items {
		if len(it) != 3 {
			return fmt.Errorf("item keys %v", it)
		}
		var id, ex string
		var sc float64
		if json.Unmarshal(it["trajectory_id"], &id) != nil || json.Unmarshal(it["explanation"], &ex) != nil || json.Unmarshal(it["score"], &sc) != nil {
			return fmt.Errorf("item %v has wrong types", it)
		}
		if sc < 0 || sc > 1 {
			return fmt.Errorf("score %v outside [0,1]", sc)
		}
	}
	return nil
}

// multiVocab is 256 byte tokens, multi-byte tokens that a JSON-trained
// tokenizer has, and the end token.
func multiVocab() byteVocab {
	return byteVocab{extra: []string{`{"`, `":`, `",`, `":"`, `"}`, `]}`, `},{"`, `true`, `null`, `0.`, `00`, `1`, `scores`,
		`trajectory_id`, `explanation`, ` the`, `ab`, `é`, "\\u00", `[{"`, `"},{"`, `e+`, `-0`}}
}

func compileT(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := Compile(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("Compile(%s): %v", schema, err)
	}
	return s
}

// walkBytes is walk that returns the output bytes and how many tokens it took.
func walkTokens(j *JSON, v byteVocab, rng *rand.Rand, limit int) (string, int, bool) {
	var out strings.Builder
	for n := 1; n <= limit; n++ {
		logits := make([]float32, v.VocabSize())
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 3)
		}
		j.Mask(logits)
		var ok []int32
		for i, l := range logits {
			if !math.IsInf(float64(l), -1) {
				ok = append(ok, int32(i))
			}
		}
		id := ok[rng.IntN(len(ok))]
		if err := j.Accept(id); err != nil {
			panic(err)
		}
		if id == eosID {
			return out.String(), n, true
		}
		b, _ := v.TokenBytes(int(id))
		out.Write(b)
	}
	return out.String(), limit, false
}

// TestJudgeWalks: random walks over a byte-level vocabulary under the
// judge schema and a max_tokens budget always end, within the budget, in a
// document Parse would take.
func TestJudgeWalks(t *testing.T) {
	s := compileT(t, judgeSchema)
	v := multiVocab()
	seeds := 40
	if raceEnabled {
		seeds = 5
	}
	for _, budget := range []int{s.minLen + 1, s.minLen + 7, 200, 600} {
		for seed := range seeds {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(budget)))
			out, n, done := walkTokens(NewJSON(v, []int32{eosID}, s).WithMaxTokens(budget), v, rng, budget)
			if !done {
				t.Fatalf("budget %d seed %d: no end within the budget: %q", budget, seed, out)
			}
			if n > budget {
				t.Fatalf("budget %d seed %d: took %d tokens", budget, seed, n)
			}
			if err := checkJudge(out); err != nil {
				t.Fatalf("budget %d seed %d: %q: %v", budget, seed, out, err)
			}
		}
	}
}

// TestScalarBudget: a top-level number or enum literal, complete but still
// extendable, also ends with the end token within max_tokens. At the last
// token the budget left no room for anything but the end token, which
// read as "no budget" and let a digit through: the output was cut with
// finish_reason "length".
func TestScalarBudget(t *testing.T) {
	v := multiVocab()
	for _, schema := range []string{`{"type":"integer"}`, `{"type":"number"}`, `{"enum":[1,12,123]}`, `{"type":"number","minimum":0,"maximum":1}`} {
		s := compileT(t, schema)
		for budget := s.minLen + 1; budget <= s.minLen+4; budget++ {
			for seed := range 20 {
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(budget)))
				out, n, done := walkTokens(NewJSON(v, []int32{eosID}, s).WithMaxTokens(budget), v, rng, budget)
				if !done {
					t.Fatalf("%s budget %d seed %d: no end within the budget: %q", schema, budget, seed, out)
				}
				if n > budget {
					t.Fatalf("%s budget %d seed %d: took %d tokens", schema, budget, seed, n)
				}
			}
		}
	}
}

// TestBudgetTooSmall: below the shortest document, the walk heads for the
// shortest completion and stops at max_tokens with a valid prefix.
func TestBudgetTooSmall(t *testing.T) {
	s := compileT(t, judgeSchema)
	v := multiVocab()
	rng := rand.New(rand.NewPCG(1, 2))
	j := NewJSON(v, []int32{eosID}, s).WithMaxTokens(10)
	out, _, done := walkTokens(j, v, rng, 10)
	if done {
		t.Fatalf("finished %q in 10 tokens; the shortest document has %d bytes", out, s.minLen)
	}
	// Every token took the document at least one byte closer to its end.
	if got := j.m.minBytes(); got > s.minLen-10 {
		t.Fatalf("after %q minBytes = %d; want at most %d (straight to the shortest completion)", out, got, s.minLen-10)
	}
}

// schemas for the property tests: each with a validator of its documents.
var propertySchemas = []struct {
	name, schema string
	valid        func(any) bool
}{
	{"json_object", "", func(v any) bool { _, ok := v.(map[string]any); return ok }},
	{"judge", judgeSchema, nil},
	{"ranges", `{"type":"object","properties":{"i":{"type":"integer","minimum":-3,"exclusiveMaximum":12},"x":{"type":"number","exclusiveMinimum":0.25,"maximum":0.5},"neg":{"type":"number","maximum":-2.5},"tags":{"type":"array","items":{"enum":["a","ab","b",1,12]},"maxItems":2},"n":{"type":["string","null"],"minLength":2,"maxLength":3}}}`,
		func(v any) bool {
			m, ok := v.(map[string]any)
			if !ok || len(m) != 5 {
				return false
			}
			i, ok1 := m["i"].(float64)
			x, ok2 := m["x"].(float64)
			neg, ok3 := m["neg"].(float64)
			tags, ok4 := m["tags"].([]any)
			if !ok1 || !ok2 || !ok3 || !ok4 || i != math.Trunc(i) || i < -3 || i >= 12 || x <= 0.25 || x > 0.5 || neg > -2.5 || len(tags) > 2 {
				return false
			}
			for _, tg := range tags {
				if !slices.Contains([]any{"a", "ab", "b", 1.0, 12.0}, tg) {
					return false
				}
			}
			if m["n"] != nil {
				n, ok := m["n"].(string)
				if !ok || len([]rune(n)) < 2 || len([]rune(n)) > 3 {
					return false
				}
			}
			return true
		}},
	{"map", `{"type":"object","additionalProperties":{"type":"array","items":{"type":"boolean"},"minItems":1}}`,
		func(v any) bool {
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			for _, x := range m {
				a, ok := x.([]any)
				if !ok || len(a) < 1 {
					return false
				}
				for _, e := range a {
					if _, ok := e.(bool); !ok {
						return false
					}
				}
			}
			return true
		}},
}

func schemaOf(t testing.TB, text string) *Schema {
	if text == "" {
		return Object()
	}
	return compileT(t, text)
}

func validDoc(i int, out string) error {
	if propertySchemas[i].valid == nil {
		return checkJudge(out)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return err
	}
	if !propertySchemas[i].valid(v) {
		return fmt.Errorf("does not fit the schema")
	}
	return nil
}

// TestWalksValid: for every schema, finished walks (with and without a
// budget) parse and validate, and budgeted walks always finish.
func TestWalksValid(t *testing.T) {
	v := multiVocab()
	for i, c := range propertySchemas {
		s := schemaOf(t, c.schema)
		t.Run(c.name, func(t *testing.T) {
			finished, walks := 0, 60
			if raceEnabled {
				walks = 20
			}
			for seed := range walks {
				rng := rand.New(rand.NewPCG(uint64(seed), 7))
				j := NewJSON(v, []int32{eosID}, s)
				budget := 0
				if seed%2 == 0 {
					budget = s.minLen + 1 + seed
					j.WithMaxTokens(budget)
				}
				out, n, done := walkTokens(j, v, rng, 400)
				if budget > 0 && (!done || n > budget) {
					t.Fatalf("seed %d: budget %d not kept: done %v after %d tokens: %q", seed, budget, done, n, out)
				}
				if !done {
					continue
				}
				finished++
				if err := validDoc(i, out); err != nil {
					t.Fatalf("seed %d: %q: %v", seed, out, err)
				}
			}
			if finished < walks/2 {
				t.Fatalf("only %d of %d walks finished", finished, walks)
			}
		})
	}
}

// TestMinBytesExact: at states met along random walks, no byte lowers
// minBytes by more than one, and following bytes that lower it by one
// ends the document in exactly minBytes bytes: so minBytes is the length
// of the shortest completion, which is what the budget relies on.
func TestMinBytesExact(t *testing.T) {
	v := multiVocab()
	for _, c := range propertySchemas {
		s := schemaOf(t, c.schema)
		seeds := 3
		if raceEnabled {
			seeds = 1
		}
		for seed := range seeds {
			rng := rand.New(rand.NewPCG(uint64(seed), 9))
			j := NewJSON(v, []int32{eosID}, s)
			for step := range 40 {
				if step%3 == 0 { // check every third state
					m := j.m
					mb := m.minBytes()
					if mb == 0 != m.complete() {
						t.Fatalf("%s: minBytes %d but complete %v", c.name, mb, m.complete())
					}
					// Greedy shortest completion.
					g := m.clone()
					for k := mb; k > 0; k-- {
						var next *machine
						for b := range 256 {
							h := g.clone()
							if h.feed(byte(b)) {
								if got := h.minBytes(); got < k-1 {
									t.Fatalf("%s: byte %q lowers minBytes from %d to %d (stack %+v)", c.name, byte(b), k, got, g.stack)
								} else if got == k-1 && next == nil {
									next = &h
								}
							}
						}
						if next == nil {
							t.Fatalf("%s: no byte lowers minBytes %d", c.name, k)
						}
						g = *next
					}
					if !g.complete() {
						t.Fatalf("%s: %d bytes of shortest completion leave the document open", c.name, mb)
					}
				}
				logits := make([]float32, v.VocabSize())
				j.Mask(logits)
				var ok []int32
				for i, l := range logits {
					if !math.IsInf(float64(l), -1) && i != eosID {
						ok = append(ok, int32(i))
					}
				}
				if len(ok) == 0 {
					break
				}
				j.Accept(ok[rng.IntN(len(ok))])
			}
		}
	}
}

// TestIndexSameMask: masking through an Index gives the tokenizer's mask.
func TestIndexSameMask(t *testing.T) {
	v := multiVocab()
	x := NewIndex(v)
	s := compileT(t, judgeSchema)
	rng := rand.New(rand.NewPCG(3, 3))
	a, b := NewJSON(v, []int32{eosID}, s).WithMaxTokens(150), NewJSON(x, []int32{eosID}, s).WithMaxTokens(150)
	for step := range 150 {
		la, lb := make([]float32, v.VocabSize()), make([]float32, v.VocabSize())
		a.Mask(la)
		b.Mask(lb)
		var ok []int32
		for i := range la {
			if math.IsInf(float64(la[i]), -1) != math.IsInf(float64(lb[i]), -1) {
				t.Fatalf("step %d token %d: masks differ", step, i)
			}
			if !math.IsInf(float64(la[i]), -1) {
				ok = append(ok, int32(i))
			}
		}
		id := ok[rng.IntN(len(ok))]
		if a.Accept(id) != nil || b.Accept(id) != nil || id == eosID {
			break
		}
	}
}

// TestRanges: numbers keep their bounds byte by byte.
func TestRanges(t *testing.T) {
	for _, c := range []struct {
		schema string
		docs   map[string]bool
	}{
		{`{"type":"number","minimum":0,"maximum":1}`, map[string]bool{"0": true, "1": true, "0.5": true, "1.0": true, "1.01": false, "2": false, "-0.1": false, "-0": true, "10": false, "0.999": true, "1e0": false}},
		{`{"type":"integer","exclusiveMinimum":-2,"maximum":100}`, map[string]bool{"-1": true, "-2": false, "100": true, "101": false, "99": true, "0": true, "1.0": false}},
		{`{"type":"number","exclusiveMinimum":0.25,"exclusiveMaximum":0.5}`, map[string]bool{"0.25": false, "0.26": true, "0.5": false, "0.4999": true, "0.3": true}},
		{`{"type":"integer","minimum":10}`, map[string]bool{"9": false, "10": true, "1000000": true, "-10": false}},
		{`{"type":"array","minItems":1,"maxItems":2,"items":{"type":"null"}}`, map[string]bool{"[]": false, "[null]": true, "[null,null]": true, "[null,null,null]": false}},
		{`{"type":"string","minLength":2}`, map[string]bool{`"a"`: false, `"ab"`: true, `"é\n"`: true}},
		{`{"type":["integer","null","boolean"],"nullable":true}`, map[string]bool{"1": true, "null": true, "false": true, "1.5": false, `"x"`: false}},
	} {
		s := compileT(t, c.schema)
		for doc, want := range c.docs {
			if got := accepts(s, doc); got != want {
				t.Errorf("%s: %s accepted %v, want %v", c.schema, doc, got, want)
			}
		}
	}
}

// TestLargeBoundsCompile: a bound far from 0 (a Unix time as minimum, a
// large count) compiles at once and sets the shortest document right:
// finding the shortest in-range number must not try every digit string
// shorter than the bound, which took seconds at 8 digits and grew tenfold
// a digit (a request whose schema hung the server).
func TestLargeBoundsCompile(t *testing.T) {
	for _, c := range []struct {
		schema string
		min    int
		docs   map[string]bool
	}{
		{`{"type":"integer","minimum":1700000000}`, len("1700000000"), map[string]bool{"1700000000": true, "1699999999": false, "17000000000": true}},
		{`{"type":"number","minimum":1e20}`, len("100000000000000000000"), map[string]bool{"100000000000000000000": true, "9999999999999999": false}},
		{`{"type":"integer","maximum":-1e15}`, len("-1000000000000000"), map[string]bool{"-1000000000000000": true, "-999999999999999": false}},
		{`{"type":"object","properties":{"t":{"type":"integer","exclusiveMinimum":123456789012}}}`, len(`{"t":123456789013}`), map[string]bool{`{"t":123456789013}`: true, `{"t":123456789012}`: false}},
	} {
		done := make(chan *Schema, 1)
		go func() {
			s, err := Compile(json.RawMessage(c.schema))
			if err != nil {
				t.Errorf("Compile(%s): %v", c.schema, err)
			}
			done <- s
		}()
		var s *Schema
		select {
		case s = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Compile(%s) still running after 10s", c.schema)
		}
		if s == nil {
			continue
		}
		if got := s.Start().MinBytes(); got != c.min {
			t.Errorf("%s: shortest document %d bytes, want %d", c.schema, got, c.min)
		}
		for doc, want := range c.docs {
			if got := accepts(s, doc); got != want {
				t.Errorf("%s: %s accepted %v, want %v", c.schema, doc, got, want)
			}
		}
	}
}

// TestState: the byte-level API never changes the state it is called on.
func TestState(t *testing.T) {
	st := compileT(t, `{"type":"object","properties":{"a":{"type":"integer"}}}`).Start()
	if st.Done() || st.MinBytes() != len(`{"a":0}`) {
		t.Fatalf("start: done %v, minBytes %d", st.Done(), st.MinBytes())
	}
	next, ok := st.Advance([]byte(`{"a":1`))
	if !ok || next.Done() || !next.Allowed([]byte("2}")) || next.Allowed([]byte(".")) {
		t.Fatal("Advance/Allowed")
	}
	if _, ok := next.Advance([]byte("x")); ok {
		t.Fatal("accepted x")
	}
	c := next.Clone()
	end, ok := c.Advance([]byte("}"))
	if !ok || !end.Done() || end.MinBytes() != 0 || next.Done() || c.Done() {
		t.Fatal("state shared after Clone/Advance")
	}
	if st.MinBytes() != 7 {
		t.Fatal("start state changed")
	}
}

// FuzzAdvance: whatever the bytes, the recogniser never panics; what it
// takes as a complete document is valid JSON of the schema; a document
// the bytes steer through a random schema is valid for an independent
// validator, with minBytes exact at every state on the way; and any
// object Go can encode is taken by json_object.
func FuzzAdvance(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5e-3,true,null,"\u00e9"]}`, `{"scores":[{"trajectory_id":"a","explanation":"b","score":0.5}]}`,
		`{"a":{"b":{"c":[[[]]]}}}`, `[1]`, `{"a":01}`, "{\"\xff\":1}", `{"a":-0.0e+1}`, `{"scores":[]}`} {
		f.Add([]byte(s))
	}
	judge := compileT(f, judgeSchema)
	ranges := compileT(f, propertySchemas[2].schema)
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, s := range []*Schema{Object(), judge, ranges} {
			m := newMachine(s)
			ok := true
			for _, b := range data {
				if !m.feed(b) {
					ok = false
					break
				}
				if m.minBytes() < 0 {
					t.Fatal("negative minBytes")
				}
			}
			if ok && m.complete() {
				var err error
				switch i {
				case 0:
					err = validDoc(0, string(data))
				case 1:
					err = checkJudge(string(data))
				case 2:
					err = validDoc(2, string(data))
				}
				if err != nil {
					t.Fatalf("schema %d took %q: %v", i, data, err)
				}
			}
		}
		// A random schema of the keywords Compile accepts (drawn from the
		// data's first bytes), a document steered through it by the rest,
		// checked by the independent validator.
		var seed [8]byte
		copy(seed[:], data)
		raw, _ := json.Marshal(randSchema(rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:]), 13)), 0))
		if rs, err := Compile(raw); err == nil {
			doc := steerWalk(t, raw, rs, data[min(len(data), 8):])
			if err := validates(validatorFor(t, raw), doc); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			if _, isObj := v.(map[string]any); isObj {
				enc, _ := json.Marshal(v)
				if !accepts(Object(), string(enc)) {
					t.Fatalf("json_object refuses %s", enc)
				}
			}
		}
	})
}

// BenchmarkMask measures one Mask over a synthetic 150k-token vocabulary
// inside a JSON string (where most tokens fit) and between values.
func BenchmarkMask(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 5))
	alphabet := []byte(`abcdefghijklmnopqrstuvwxyz ABCDEFG{}[]":,0123456789.-_\` + "\n")
	// The first extra tokens start with a control byte, which never fits:
	// with their logits highest, Mask must scan the whole vocabulary.
	var extra []string
	for i := range 40 {
		extra = append(extra, fmt.Sprintf("\x01%c", 'a'+i))
	}
	for len(extra) < 150000-257 {
		n := 2 + rng.IntN(7)
		t := make([]byte, n)
		for i := range t {
			t[i] = alphabet[rng.IntN(len(alphabet))]
		}
		extra = append(extra, string(t))
	}
	v := bigVocab{extra: extra}
	x := NewIndex(v)
	s := compileT(b, judgeSchema)
	for _, c := range []struct{ name, prefix string }{{"in-string", `{"scores":[{"trajectory_id":"ab`}, {"after-key", `{"scores":[{"trajectory_id":"a","explanation":"b","score":`}} {
		for _, vv := range []struct {
			name string
			v    Vocab
		}{{"tokenizer", v}, {"index", x}} {
			for _, full := range []bool{false, true} {
				name := c.name + "/" + vv.name + "/top-k"
				if full {
					name = c.name + "/" + vv.name + "/full-scan"
				}
				b.Run(name, func(b *testing.B) {
					j := NewJSON(vv.v, []int32{int32(v.VocabSize() - 1)}, s)
					for _, ch := range []byte(c.prefix) {
						j.m.feed(ch)
					}
					logits := make([]float32, v.VocabSize())
					for b.Loop() {
						for i := range logits {
							logits[i] = float32(i%97) / 97
						}
						if full {
							for i := range 32 {
								logits[i], logits[256+i] = 2, 2
							}
						}
						j.Mask(logits)
					}
				})
			}
		}
	}
}

// bigVocab is a synthetic tokenizer: 256 bytes, extra tokens, then EOS.
type bigVocab struct{ extra []string }

func (v bigVocab) VocabSize() int { return 256 + len(v.extra) + 1 }
func (v bigVocab) TokenBytes(id int) ([]byte, bool) {
	switch {
	case id < 256:
		return []byte{byte(id)}, true
	case id-256 < len(v.extra):
		return []byte(v.extra[id-256]), true
	}
	return nil, false
}
func (v bigVocab) IsSpecial(id int) bool { return id == v.VocabSize()-1 }

// TestDecimalBoundsNoDeadEnd: with bounds that float64 holds inexactly
// (tenths), no number prefix the recogniser takes is a dead end: each
// either ends or has a byte toward its shortest completion. The interval
// a fraction prefix can reach was summed in float64, so 0.2 + 0.1 came
// out above 0.3 and "0.2" was taken under a minimum of 0.3: no digit
// could then bring it to 0.3, and the constraint left the model no token
// (constraint_no_token) once the number was 24 bytes long.
func TestDecimalBoundsNoDeadEnd(t *testing.T) {
	for tenth := -25; tenth <= 25; tenth++ {
		for _, key := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			schema := fmt.Sprintf(`{"type":"number",%q:%s}`, key, strconv.FormatFloat(float64(tenth)/10, 'f', -1, 64))
			s := compileT(t, schema)
			var walk func(st *State, text string)
			walk = func(st *State, text string) {
				mb := st.MinBytes()
				if mb > 0 && !slices.ContainsFunc([]byte("-0123456789."), func(b byte) bool {
					next, ok := st.Advance([]byte{b})
					return ok && next.MinBytes() == mb-1
				}) {
					t.Fatalf("%s: after %q no byte leads to the end (minBytes %d)", schema, text, mb)
				}
				if len(text) == 4 {
					return
				}
				for _, b := range []byte("-0123456789.") {
					if next, ok := st.Advance([]byte{b}); ok {
						walk(next, text+string(b))
					}
				}
			}
			walk(s.Start(), "")
		}
	}
}
