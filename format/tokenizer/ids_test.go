package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// withIDs is tinyJSON's document (256 byte tokens, "he" at 256) with the
// given vocabulary entries added and the added_tokens replaced, all given
// as raw JSON so that an id can be spelled any way a file might.
func withIDs(t *testing.T, vocab map[string]string, added string, extra map[string]any) []byte {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(tinyJSON(t, []any{"h e"}, nil, extra)))
	dec.UseNumber() // keeps ids such as 1e400 as they are spelled
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	v := doc["model"].(map[string]any)["vocab"].(map[string]any)
	for tok, id := range vocab {
		v[tok] = json.RawMessage(id)
	}
	if added != "" {
		doc["added_tokens"] = json.RawMessage(added)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type idCase struct {
	name  string
	vocab map[string]string // entries added to the vocabulary, id as raw JSON
	added string            // added_tokens as raw JSON
	extra map[string]any
	want  []string // in the error; nil: Parse succeeds
}

// idCases: ids that no table may be sized by, and ids given to two
// different tokens, each refused with an error that names the token(s);
// and the repetitions real files have, which load.
func idCases() []idCase {
	special := func(ids string) map[string]any {
		return map[string]any{"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": json.RawMessage(ids)}}}}
	}
	const big = `[{"id":2147483647,"content":"<big>","special":true}]`
	return []idCase{
		{name: "vocab id 2e9", vocab: map[string]string{"zz": "2000000000"}, want: []string{`"zz"`, "2000000000", "largest must be below 66052"}},
		{name: "added id 2147483647", added: big, want: []string{`"<big>"`, "2147483647", "largest must be below"}},
		{name: "vocab id past int32", vocab: map[string]string{"zz": "2147483648"}, want: []string{`"zz"`, "2147483648", "not a whole number from 0 to 2147483647"}},
		{name: "vocab id past int64", vocab: map[string]string{"zz": "99999999999999999999"}, want: []string{`"zz"`, "99999999999999999999"}},
		{name: "added id past int32", added: `[{"id":4294967296,"content":"<big>"}]`, want: []string{`"<big>"`, "4294967296"}},
		{name: "negative vocab id", vocab: map[string]string{"zz": "-1"}, want: []string{`"zz"`, "has id -1"}},
		{name: "negative id of the empty token", vocab: map[string]string{"": "-1"}, want: []string{`""`, "has id -1"}},
		{name: "negative added id", added: `[{"id":-5,"content":"<neg>"}]`, want: []string{`"<neg>"`, "has id -5"}},
		{name: "fractional vocab id", vocab: map[string]string{"zz": "1.5"}, want: []string{`"zz"`, "has id 1.5"}},
		{name: "vocab id in exponent form", vocab: map[string]string{"zz": "2e9"}, want: []string{`"zz"`, "has id 2e9"}},
		{name: "vocab id a string", vocab: map[string]string{"zz": `"7"`}, want: []string{`"zz"`, `has id "7"`}},
		{name: "vocab id null", vocab: map[string]string{"zz": "null"}, want: []string{`"zz"`, "has id null"}},
		{name: "vocab id an object", vocab: map[string]string{"zz": `{"id":7}`}, want: []string{`"zz"`, `has id {"id":7}`}},
		{name: "fractional added id", added: `[{"id":300.5,"content":"<frac>"}]`, want: []string{`"<frac>"`, "has id 300.5"}},
		{name: "added id a string", added: `[{"id":"300","content":"<str>"}]`, want: []string{`"<str>"`, `has id "300"`}},
		{name: "added id missing", added: `[{"content":"<none>"}]`, want: []string{`"<none>"`, "has no id"}},
		{name: "two vocab tokens, one id", vocab: map[string]string{"zz": "65"}, want: []string{`"A"`, `"zz"`, "same id 65"}},
		{name: "added token on another vocab token's id", added: `[{"id":65,"content":"<x>"}]`, want: []string{`"<x>"`, `"A"`, "id 65"}},
		{name: "two added tokens, one id", added: `[{"id":300,"content":"<a>"},{"id":300,"content":"<b>"}]`, want: []string{`"<a>"`, `"<b>"`, "id 300"}},
		{name: "special token id 2e9", extra: special("[2000000000]"), want: []string{`"<s>"`, "2000000000"}},
		{name: "special token id fractional", extra: special("[1.5]"), want: []string{`"<s>"`, "1.5"}},
		{name: "special token id past int64", extra: special("[1e400]"), want: []string{`"<s>"`, "1e400"}},

		{name: "added token repeating its vocab entry", added: `[{"id":65,"content":"A","special":true}]`},
		{name: "added token repeated", added: `[{"id":300,"content":"<a>"},{"id":300,"content":"<a>"}]`},
		{name: "GPT-2's <|endoftext|>", vocab: map[string]string{"<|endoftext|>": "257"}, added: `[{"id":257,"content":"<|endoftext|>","special":true}]`},
		// 258 tokens: the largest id may be 2·258 + 65536 − 1.
		{name: "largest id allowed", added: `[{"id":66051,"content":"<edge>"}]`},
		{name: "one past the largest id allowed", added: `[{"id":66052,"content":"<edge>"}]`, want: []string{`"<edge>"`, "66052", "below 66052"}},
	}
}

// childEnv marks the child process TestParseIDs runs in.
const childEnv = "HONE_TOKENIZER_TEST_CHILD"

// TestParseIDs: every case in idCases, in a child process whose address
// space is capped. Before ids were checked, a file with an id of 2e9 made
// Parse size its tables by it (over 50 GB) and the runtime's fatal "out of
// memory" ended the whole test binary; in the child it fails this test,
// with the child's output, and nothing else.
func TestParseIDs(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		runInChild(t, "TestParseIDs")
		return
	}
	for _, c := range idCases() {
		t.Run(c.name, func(t *testing.T) {
			tk, err := Parse(bytes.NewReader(withIDs(t, c.vocab, c.added, c.extra)))
			if c.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				checkRepeats(t, tk)
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded (vocabulary size %d), want an error containing %q", tk.VocabSize(), c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse error %q, want one containing %q", err, w)
				}
			}
		})
	}
}

// checkRepeats: an added token that repeats a vocabulary entry is that
// token both ways.
func checkRepeats(t *testing.T, tk *Tokenizer) {
	for _, a := range tk.AddedTokens() {
		if got := tk.Encode(a.Content, false); !slices.Equal(got, []int{a.ID}) {
			t.Errorf("Encode(%q) = %v, want [%d]", a.Content, got, a.ID)
		}
		if got := tk.Decode([]int{a.ID}, false); got != a.Content {
			t.Errorf("Decode([%d]) = %q, want %q", a.ID, got, a.Content)
		}
	}
}

// runInChild runs the test name again in a child process with its address
// space capped at 4 GiB, so that a fatal out-of-memory ends only the
// child. Under the race detector, whose shadow memory takes terabytes of
// address space, the cap is left off.
func runInChild(t *testing.T, name string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run=^" + name + "$", "-test.count=1", "-test.timeout=5m"}
	cmd := exec.Command("/bin/sh", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, exe}, args...)...)
	if raceEnabled() {
		cmd = exec.Command(exe, args...)
	}
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 3000 { // what went wrong comes first; a fatal error's goroutine dump follows
			out = append(out[:3000:3000], "…"...)
		}
		t.Fatalf("%s in a child process (address space capped at 4 GiB): %v\n%s", name, err, out)
	}
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// FuzzParse: Parse never panics, never answers with encoding/json's type
// errors (they name Go types), and sizes its tables by the document: the
// id space of what it accepts stays within twice the document's length
// plus the slack idSpace allows. A tokenizer it accepts encodes and
// decodes. testdata/fuzz/FuzzParse holds the cases of idCases as seeds.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) {
		tk, err := Parse(bytes.NewReader(doc))
		if err != nil {
			if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
				t.Errorf("Parse error names Go types: %v", err)
			}
			return
		}
		gzipped := bytes.HasPrefix(doc, []byte{0x1f, 0x8b}) // the document is larger than its bytes here
		if n := tk.VocabSize(); !gzipped && n > 2*len(doc)+idSlack {
			t.Errorf("a %d-byte document gave an id space of %d", len(doc), n)
		}
		text := "Hello, wörld! <s> 123\n\n"
		tk.Decode(tk.Encode(text, true), false)
	})
}

// TestFuzzSeeds: the seed corpus holds every case of idCases, as the
// documents the test builds today.
func TestFuzzSeeds(t *testing.T) {
	for _, c := range idCases() {
		name := "testdata/fuzz/FuzzParse/" + strings.Join(strings.FieldsFunc(strings.ToLower(c.name), func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9')
		}), "_")
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", withIDs(t, c.vocab, c.added, c.extra))
		got, err := os.ReadFile(name)
		if os.Getenv("HONE_WRITE_FUZZ_SEEDS") != "" {
			if err := os.WriteFile(name, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || string(got) != want {
			t.Errorf("%s is missing or stale (%v); rerun with HONE_WRITE_FUZZ_SEEDS=1", name, err)
		}
	}
}
