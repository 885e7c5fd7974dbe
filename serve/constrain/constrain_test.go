package constrain

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// byteVocab is a tokenizer with the 256 byte tokens, a few multi-byte
// tokens and an end-of-sequence token (id eosID).
type byteVocab struct{ extra []string }

const eosID = 300

func (v byteVocab) VocabSize() int { return eosID + 1 }
func (v byteVocab) TokenBytes(id int) ([]byte, bool) {
	switch {
	case id < 256:
		return []byte{byte(id)}, true
	case id-256 < len(v.extra):
		return []byte(v.extra[id-256]), true
	}
	return nil, false
}
func (v byteVocab) IsSpecial(id int) bool { return id == eosID }

func accepts(s *Schema, doc string) bool {
	m := newMachine(s)
	for i := 0; i < len(doc); i++ {
		if !m.feed(doc[i]) {
			return false
		}
	}
	return m.complete()
}

func TestRecogniser(t *testing.T) {
	anyObj := Object()
	for _, doc := range []string{`{}`, `{"a":1}`, `{"a":[1,2.5,-3e+2,true,false,null,"x\"\\\u00e9"],"b":{"c":{}}}`, `{"":""}`} {
		if !accepts(anyObj, doc) {
			t.Errorf("json_object refuses %s", doc)
		}
	}
	for _, doc := range []string{`[]`, `1`, `{"a":}`, `{,}`, `{"a":1,}`, `{"a" :1}`, `{"a":01}`, `{"a":tru}`, "{\"a\":\"\x01\"}", `{"a":1}}`, `{"a":1`, `{"a":.5}`, `{"a":"\q"}`} {
		if accepts(anyObj, doc) {
			t.Errorf("json_object accepts %s", doc)
		}
	}
	s, err := Compile(json.RawMessage(`{"type":"object","properties":{"verdict":{"enum":["yes","no"]},"score":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","maxLength":3}},"ok":{"type":"boolean"},"why":{"type":"null"}},"required":["verdict"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"verdict":"yes","score":-12,"tags":[],"ok":true,"why":null}`, `{"verdict":"no","score":0,"tags":["a","abc"],"ok":false,"why":null}`} {
		if !accepts(s, doc) {
			t.Errorf("schema refuses %s", doc)
		}
	}
	for _, doc := range []string{`{"verdict":"maybe","score":1,"tags":[],"ok":true,"why":null}`, `{"score":1,"verdict":"yes","tags":[],"ok":true,"why":null}`,
		`{"verdict":"yes","score":1.5,"tags":[],"ok":true,"why":null}`, `{"verdict":"yes","score":1,"tags":["abcd"],"ok":true,"why":null}`, `{"verdict":"yes"}`} {
		if accepts(s, doc) {
			t.Errorf("schema accepts %s", doc)
		}
	}
	short, err := Compile(json.RawMessage(`{"type":"string","maxLength":2}`))
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]bool{`"é€"`: true, `"ab"`: true, `"abc"`: false, `"éab"`: false, "\"\xff\"": false, "\"\xc3\"": false, `"\u00e9x"`: true} {
		if accepts(short, doc) != want {
			t.Errorf("maxLength 2 string %q: accepted %v, want %v", doc, !want, want)
		}
	}
	for _, bad := range []string{`{"anyOf":[{"type":"string"}]}`, `{"type":"strin"}`, `[1]`, `{"type":"string","pattern":"a+"}`,
		`{"type":"number","multipleOf":2}`, `{"type":"object","minProperties":1}`, `{"$ref":"#/$defs/x"}`,
		`{"type":"object","properties":{"a":{}},"required":["b"]}`, `{"type":"object","required":["b"]}`,
		`{"type":"array","minItems":3,"maxItems":2}`, `{"type":"integer","minimum":1.2,"maximum":1.8}`, `{"type":["string","string"]}`,
		`{"type":"array","items":{"type":"string","format":"date","oneOf":[]}}`} {
		if _, err := Compile(json.RawMessage(bad)); err == nil {
			t.Errorf("Compile(%s) succeeded", bad)
		}
	}
}

// walk samples uniformly among the tokens the constraint allows until the
// end-of-sequence token or limit tokens.
func walk(j *JSON, V int, rng *rand.Rand, limit int) (string, bool) {
	var out strings.Builder
	for range limit {
		logits := make([]float32, V)
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
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
			return out.String(), true
		}
		b, _ := byteVocab{}.TokenBytes(int(id))
		if int(id) >= 256 {
			b = []byte(j.v.(byteVocab).extra[id-256])
		}
		out.Write(b)
	}
	return out.String(), false
}

// TestRandomWalksParse: whatever a sampler picks among the unmasked tokens,
// a finished output parses and has the schema's shape.
func TestRandomWalksParse(t *testing.T) {
	v := byteVocab{extra: []string{`{"`, `":`, `",`, `yes`, `true}`, `"no"`}}
	s, err := Compile(json.RawMessage(`{"type":"object","properties":{"verdict":{"enum":["yes","no"]},"n":{"type":"integer"},"flags":{"type":"array","items":{"type":"boolean"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	finished := 0
	for seed := range 100 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		out, done := walk(NewJSON(v, []int32{eosID}, s), v.VocabSize(), rng, 300)
		if !done {
			continue
		}
		finished++
		var got struct {
			Verdict *string      `json:"verdict"`
			N       *json.Number `json:"n"`
			Flags   []bool       `json:"flags"`
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil || got.Verdict == nil || got.N == nil || (*got.Verdict != "yes" && *got.Verdict != "no") ||
			strings.ContainsAny(string(*got.N), ".eE") {
			t.Fatalf("seed %d: %q does not fit the schema (%v)", seed, out, err)
		}
	}
	if finished < 75 {
		t.Fatalf("only %d of 100 walks finished within 300 tokens", finished)
	}
	// json_object: any finished output is a valid JSON object.
	for seed := range 100 {
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		out, done := walk(NewJSON(v, []int32{eosID}, Object()), v.VocabSize(), rng, 60)
		if done && (!json.Valid([]byte(out)) || out[0] != '{') {
			t.Fatalf("seed %d: %q is not a JSON object", seed, out)
		}
		if !done && !accepts(Object(), out) && len(out) > 0 {
			// A cut-off output must still be a prefix: feeding it succeeds.
			m := newMachine(Object())
			for i := 0; i < len(out); i++ {
				if !m.feed(out[i]) {
					t.Fatalf("seed %d: %q is not a JSON prefix at byte %d", seed, out, i)
				}
			}
		}
	}
}

func TestTopIndices(t *testing.T) {
	got := topIndices([]float32{1, 5, 3, 5, -1}, 3)
	if len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 2 {
		t.Fatalf("topIndices = %v", got)
	}
}

func TestWrapped(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"type":"object","properties":{"name":{"const":"f"},"arguments":{"type":"object"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	feed := func(doc string) (*JSON, bool) {
		j := NewWrapped(byteVocab{}, []int32{eosID}, "<tool_call>\n", s, "\n</tool_call>")
		for i := 0; i < len(doc); i++ {
			if !j.m.feed(doc[i]) {
				return j, false
			}
		}
		return j, true
	}
	j, ok := feed("<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":[1]}}\n</tool_call>")
	if !ok || !j.Complete() {
		t.Fatal("wrapped call refused")
	}
	if j, ok := feed("<tool_call>\n{\"name\":\"f\",\"arguments\":{}}"); !ok || j.Complete() {
		t.Fatalf("call without its suffix: ok %v, complete %v", ok, j.Complete())
	}
	for _, bad := range []string{"hello", "<tool_call>\n{\"name\":\"g\"", "<tool_call>\n{\"name\":\"f\",\"arguments\":{}}\n</tool_call>x"} {
		if _, ok := feed(bad); ok {
			t.Errorf("accepted %q", bad)
		}
	}
}

// When the model gave -Inf to every token that could continue the
// document, Mask leaves the whole row -Inf, so that the engine ends the
// sequence with a NoCandidateError naming the constraint, rather than
// allowing an end token that Accept would then refuse; with an Index and
// without.
func TestMaskNothingFits(t *testing.T) {
	s := compileT(t, `{"type":"string"}`)
	for name, v := range map[string]Vocab{"vocab": byteVocab{}, "index": NewIndex(byteVocab{})} {
		j := NewJSON(v, []int32{eosID}, s)
		logits := make([]float32, eosID+1)
		j.Mask(logits)
		for id, l := range logits {
			if finite := !math.IsInf(float64(l), -1); finite != (id == '"') {
				t.Fatalf("%s: token %d left at %v; want only the opening quote", name, id, l)
			}
		}
		clear(logits)
		logits['"'] = float32(math.Inf(-1))
		j.Mask(logits)
		for id, l := range logits {
			if !math.IsInf(float64(l), -1) {
				t.Errorf("%s: the quote at -Inf: token %d left at %v; want every token -Inf", name, id, l)
			}
		}
	}
}

// TestEnumWithType: a const or enum beside a "type" (and "nullable") keeps
// only the values of that type, as JSON Schema applies both keywords; an
// enum with none of them is an error naming it, and so is any other
// keyword beside them.
func TestEnumWithType(t *testing.T) {
	for _, c := range []struct {
		schema   string
		ok, fail []string
	}{
		{`{"type":"string","enum":["a",1]}`, []string{`"a"`}, []string{`1`}},
		{`{"type":"integer","enum":[2.5,3,4.0]}`, []string{`3`, `4.0`}, []string{`2.5`}},
		{`{"type":"number","enum":[2.5,"x"]}`, []string{`2.5`}, []string{`"x"`}},
		{`{"type":"string","nullable":true,"enum":["a",null,true]}`, []string{`"a"`, `null`}, []string{`true`}},
		{`{"type":["boolean","array"],"const":[1]}`, []string{`[1]`}, nil},
		{`{"enum":["a",1]}`, []string{`"a"`, `1`}, nil},
	} {
		s, err := Compile(json.RawMessage(c.schema))
		if err != nil {
			t.Errorf("%s: %v", c.schema, err)
			continue
		}
		for _, doc := range c.ok {
			if !accepts(s, doc) {
				t.Errorf("%s refuses %s", c.schema, doc)
			}
		}
		for _, doc := range c.fail {
			if accepts(s, doc) {
				t.Errorf("%s accepts %s", c.schema, doc)
			}
		}
	}
	for schema, want := range map[string]string{
		`{"type":"string","enum":[1,2]}`: `schema.enum: no value is of the type string`,
		`{"type":"null","const":"x"}`:    `schema.const: no value is of the type null`,
		// Keywords beside const or enum restrict the literals too; they
		// were ignored, so "a" and 50 came out against minLength and maximum.
		`{"enum":["a","abcd"],"minLength":3}`:                  `schema: keyword "minLength" beside "enum" is not supported`,
		`{"type":"integer","enum":[1,50],"maximum":10}`:        `schema: keyword "maximum" beside "enum" is not supported`,
		`{"const":"a","enum":["b"]}`:                           `schema: keyword "enum" beside "const" is not supported`,
		`{"properties":{"a":{"enum":[[1,2,3]],"maxItems":1}}}`: `schema.properties.a: keyword "maxItems" beside "enum"`,
	} {
		if _, err := Compile(json.RawMessage(schema)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", schema, err, want)
		}
	}
}

// TestSurrogateEscapes: a \u escape of a UTF-16 surrogate is allowed only
// as the high half of a pair followed by its low half, which together are
// one character for maxLength, as JSON Schema counts code points; a lone
// half (which strict parsers such as serde_json refuse, and which no UTF-8
// text holds) is never let through, not even when maxLength or the token
// budget would close the string after a high half.
func TestSurrogateEscapes(t *testing.T) {
	str, err := Compile(json.RawMessage(`{"type":"string"}`))
	if err != nil {
		t.Fatal(err)
	}
	one, err := Compile(json.RawMessage(`{"type":"string","maxLength":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *Schema
		doc  string
		want bool
	}{
		{str, `"\ud83d\ude00"`, true},
		{str, `"\uD83D\uDE00x"`, true},
		{str, `"\ud7ff\ue000"`, true},
		{one, `"\ud83d\ude00"`, true},
		{str, `"\ud800"`, false},
		{str, `"\ud800x"`, false},
		{str, `"\ud800\u0041"`, false},
		{str, `"\ud800\ud800"`, false},
		{str, `"\udc00"`, false},
		{str, `"\ude00\ud83d"`, false},
	} {
		if got := accepts(c.s, c.doc); got != c.want {
			t.Errorf("%s: accepted %v, want %v", c.doc, got, c.want)
		}
	}
	st, ok := one.Start().Advance([]byte(`"\ud83d`))
	if !ok {
		t.Fatal(`"\ud83d refused`)
	}
	if st.Allowed([]byte(`"`)) || !st.Allowed([]byte(`\`)) {
		t.Errorf(`after a high surrogate the string closed, or its low half was refused`)
	}
	if n := st.MinBytes(); n != len(`\udc00"`) {
		t.Errorf(`MinBytes after "\ud83d = %d, want %d`, n, len(`\udc00"`))
	}
}

// TestFalseSchemaSaysWhy: the schema false, at the top or under a
// property or items, is refused saying it admits no value (the error said
// "want a JSON object", as if the schema were malformed).
func TestFalseSchemaSaysWhy(t *testing.T) {
	for _, s := range []string{`false`, `{"type":"array","items":false}`, `{"type":"object","properties":{"a":false}}`} {
		_, err := Compile(json.RawMessage(s))
		if err == nil || !strings.Contains(err.Error(), "admits no value") {
			t.Errorf("Compile(%s): %v, want an error saying false admits no value", s, err)
		}
	}
}
