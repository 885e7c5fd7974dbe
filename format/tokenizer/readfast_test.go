package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkReadFast compares readFast with encoding/json on doc: where readFast
// accepts a document, encoding/json must decode it to the same fields. It
// reports whether readFast accepted it.
func checkReadFast(t *testing.T, name string, doc []byte) bool {
	t.Helper()
	fast, ok := readFast(doc)
	if !ok {
		return false
	}
	slow, err := decodeJSONFile(doc)
	if err != nil {
		t.Errorf("%s: readFast accepted what encoding/json refuses (%v): %.200q", name, err, doc)
		return true
	}
	if fast.Model.Vocab != nil {
		t.Errorf("%s: readFast filled Vocab", name)
	}
	want, _, err := slow.Model.vocabIDs(0)
	if err != nil {
		t.Errorf("%s: readFast accepted ids that vocabIDs refuses (%v): %.200q", name, err, doc)
		return true
	}
	if fast.Model.ids == nil {
		fast.Model.ids = map[string]int32{} // no vocabulary at all: vocabIDs gives an empty map
	}
	if !reflect.DeepEqual(fast.Model.ids, want) {
		t.Errorf("%s: vocabulary differs from encoding/json's: %.200q", name, doc)
	}
	if len(fast.Model.entries) != len(want) {
		t.Errorf("%s: %d vocabulary entries listed, %d in the map", name, len(fast.Model.entries), len(want))
	}
	for _, e := range fast.Model.entries {
		if id, ok := want[e.tok]; !ok || id != e.id {
			t.Errorf("%s: vocabulary entry %q: %d listed, %d (%v) in encoding/json's", name, e.tok, e.id, id, ok)
		}
	}
	fast.Model.ids, fast.Model.entries, slow.Model.Vocab = nil, nil, nil
	if len(fast.Model.Merges) == 0 && len(slow.Model.Merges) == 0 {
		fast.Model.Merges, slow.Model.Merges = nil, nil
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("%s: readFast gives\n%+v\nencoding/json gives\n%+v\nfor %.300q", name, fast, slow, doc)
	}
	return true
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadFastRealFiles: the real tokenizer files take the fast path and
// read as encoding/json decodes them.
func TestReadFastRealFiles(t *testing.T) {
	if raceEnabled() {
		// One goroutine over 20 MB of JSON: nothing for the race detector
		// to check, and 10 s under its instrumentation instead of about 1
		// (make test's race pass runs this package for the word cache's
		// atomics; its test-unit pass runs this test).
		t.Skip("one goroutine over the real files: nothing for the race detector, ten times slower under it")
	}
	for _, name := range []string{"qwen3", "llama3"} {
		doc := gunzipFile(t, filepath.Join(testdataDir, name, FileName+".gz"))
		if !checkReadFast(t, name, doc) {
			t.Errorf("%s: readFast does not accept the file; Load takes the slow path", name)
		}
	}
}

// readFastCases are documents around the edges of what readFast accepts,
// each with whether it should.
func readFastCases(t testing.TB) []struct {
	name   string
	doc    string
	accept bool
} {
	tiny := tinyJSON(t, []any{"h e", []string{"l", "l"}}, []AddedToken{{ID: 300, Content: "<s>", Special: true}}, nil)
	edit := func(old, new string) string {
		if !strings.Contains(tiny, old) {
			t.Fatalf("tinyJSON holds no %q", old)
		}
		return strings.Replace(tiny, old, new, 1)
	}
	return []struct {
		name   string
		doc    string
		accept bool
	}{
		{"tiny", tiny, true},
		{"indented", func() string {
			var b bytes.Buffer
			if err := json.Indent(&b, []byte(tiny), "\r\n", "\t "); err != nil {
				t.Fatal(err)
			}
			return " \n" + b.String() + "\n\t"
		}(), true},
		{"escaped vocab key", edit(`"he":256`, `"h\u0065":256`), true},
		{"escaped merge", edit(`"h e"`, `"h\u0020e"`), true},
		{"escaped field key", edit(`"model":`, `"mod\u0065l":`), true},
		{"unknown fields", edit(`"model":{`, `"version":"1.0","truncation":null,"padding":{"a":[1,-2.5e+3,true,false,null,"\\\""]},"model":{"fuse_unk":false,`), true},
		{"null fields", edit(`"post_processor":null`, `"post_processor":null,"truncation":null`), true},
		{"empty vocab and merges", `{"model":{"vocab":{},"merges":[]}}`, true},
		{"no model", `{"decoder":{"type":"ByteLevel"}}`, true},
		{"id 0 and MaxInt32", edit(`"he":256`, `"he":0,"hx":2147483647`), true},
		{"invalid UTF-8 key", edit(`"he":256`, "\"h\xffe\":256"), true},
		{"invalid UTF-8 merge", edit(`"h e"`, "\"h\xff e\""), true},
		{"model fields", edit(`"type":"BPE"`, `"type":"BPE","dropout":null,"unk_token":"<unk>","byte_fallback":false,"ignore_merges":true,"end_of_word_suffix":"","continuing_subword_prefix":null`), true},

		{"id past int32", edit(`"he":256`, `"he":2147483648`), false},
		{"negative id", edit(`"he":256`, `"he":-1`), false},
		{"fractional id", edit(`"he":256`, `"he":256.0`), false},
		{"exponent id", edit(`"he":256`, `"he":2e2`), false},
		{"leading zero id", edit(`"he":256`, `"he":0256`), false},
		{"string id", edit(`"he":256`, `"he":"256"`), false},
		{"repeated vocab key", edit(`"he":256`, `"he":256,"he":257`), false},
		{"repeated field", edit(`"decoder":`, `"decoder":null,"decoder":`), false},
		{"field in upper case", edit(`"decoder":`, `"Decoder":`), false},
		{"Kelvin sign", edit(`"pre_tokenizer":`, `"pre_to\u212Aenizer":`), false},
		{"trailing text", tiny + "x", false},
		{"two documents", tiny + tiny, false},
		{"type error", edit(`"type":"BPE"`, `"type":5`), false},
		{"added_tokens type error", edit(`"added_tokens":[`, `"added_tokens":[5,`), false},
		{"vocab null", edit(`"vocab":{`, `"vocab":null,"x":{`), false},
		{"merges null", `{"model":{"vocab":{},"merges":null}}`, false},
		{"control character", edit(`"h e"`, "\"h\te\""), false},
		{"bad escape", edit(`"h e"`, `"h\x e"`), false},
		{"short unicode escape", edit(`"h e"`, `"h\u00 e"`), false},
		{"trailing comma", edit(`"h e"`, `"h e",`), false},
		{"missing comma", edit(`"h e",`, `"h e" `), false},
		{"bad number", edit(`"post_processor":null`, `"post_processor":null,"x":-`), false},
		{"bad literal", edit(`"post_processor":null`, `"post_processor":nul`), false},
		{"deep", `{"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, false},
		{"array", `[]`, false},
		{"empty", ``, false},
		{"truncated", tiny[:len(tiny)/2], false},
	}
}

// TestReadFastCases: readFast accepts what it should, and gives what
// encoding/json gives on everything it accepts.
func TestReadFastCases(t *testing.T) {
	for _, c := range readFastCases(t) {
		if got := checkReadFast(t, c.name, []byte(c.doc)); got != c.accept {
			t.Errorf("%s: readFast accepted %v, want %v", c.name, got, c.accept)
		}
	}
}

// FuzzReadFast: on any document readFast accepts, encoding/json decodes the
// same fields. The cases of readFastCases are the seeds.
func FuzzReadFast(f *testing.F) {
	for _, c := range readFastCases(f) {
		f.Add([]byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkReadFast(t, "fuzz", doc)
	})
}
