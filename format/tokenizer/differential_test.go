package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestDifferentialJS runs testdata/tokenizers/js/differential.mjs, which
// encodes and decodes a seeded corpus of adversarial texts (every kind of
// character, special-token text, long words and runs of white space, digits
// and combining marks) with Hugging Face's JavaScript tokenizers on the real
// tokenizer files, and requires the same ids and text here: Encode with and
// without the post-processor's tokens, Decode with and without special
// tokens, a StreamDecoder fed one id at a time, and EncodeContinuation of
// the text cut at the reference's token boundaries
// (checkContinuationCuts). The golden files hold
// fixed cases; this reaches the combinations they lack (it found the
// stream-safe cut NFC made in a run of more than 30 marks). It needs node
// and `npm ci` in testdata/tokenizers/js; without them it skips, except
// under CI where it fails. HONE_TOKDIFF_SEED and HONE_TOKDIFF_COUNT choose
// another corpus (default seed 1, 120 texts).
func TestDifferentialJS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node over four tokenizer files")
	}
	node, err := exec.LookPath("node")
	js := filepath.Join(testdataDir, "js")
	if _, serr := os.Stat(filepath.Join(js, "node_modules", "@huggingface", "tokenizers")); err != nil || serr != nil {
		msg := "needs node and `npm ci` in testdata/tokenizers/js"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	gemma, _ := gemmaTokenizer(t)
	seed, count := os.Getenv("HONE_TOKDIFF_SEED"), os.Getenv("HONE_TOKDIFF_COUNT")
	if seed == "" {
		seed = "1"
	}
	if count == "" {
		count = "120"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "differential.mjs", seed, count)
	cmd.Dir = js
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node differential.mjs %s %s: %v\n%s", seed, count, err, stderr.Bytes())
	}
	var doc map[string][]goldenCase
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("differential.mjs output: %v", err)
	}
	for name, cases := range doc {
		tk := gemma
		if name != "gemma3" {
			tk = testTokenizer(t, name)
		}
		t.Run(name, func(t *testing.T) {
			for i, c := range cases {
				if !checkDifferential(t, tk, c) {
					t.Fatalf("case %d of seed %s (%d cases): %+q", i, seed, len(cases), c.Text)
				}
			}
		})
	}
}

// checkDifferential compares one case with the reference and reports
// whether all agreed.
func checkDifferential(t *testing.T, tk *Tokenizer, c goldenCase) bool {
	t.Helper()
	ok := true
	if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDs) {
		t.Errorf("Encode(addSpecial):\n got  %v\n want %v", got, c.IDs)
		ok = false
	}
	if got := tk.Encode(c.Text, false); !slices.Equal(got, c.IDsNoSpecial) {
		t.Errorf("Encode:\n got  %v\n want %v", got, c.IDsNoSpecial)
		ok = false
	} else if _, _, cok := checkContinuationCuts(t, tk, c.Text, c.IDsNoSpecial); !cok {
		ok = false
	}
	if got := tk.Decode(c.IDs, false); got != c.Decoded {
		t.Errorf("Decode: got %+q, want %+q", got, c.Decoded)
		ok = false
	}
	if got := tk.Decode(c.IDs, true); got != c.DecodedSkipSpecial {
		t.Errorf("Decode(skipSpecial): got %+q, want %+q", got, c.DecodedSkipSpecial)
		ok = false
	}
	want := c.Decoded
	if c.Continued != nil {
		want = *c.Continued
	}
	if got := streamDecode(tk, c.IDs, false); got != want {
		t.Errorf("StreamDecoder: got %+q, want %+q", got, want)
		ok = false
	}
	return ok
}
