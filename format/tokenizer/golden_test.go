package tokenizer

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"
)

const (
	testdataDir = "../../testdata/tokenizers"
	rerun       = "rerun `node testdata/tokenizers/js/golden.mjs` (see testdata/tokenizers/golden/README.md)"
)

// goldenNames are the tokenizers kept gzipped in testdata/tokenizers, each
// with its golden file (Gemma 3's is read from node_modules: gemma3_test.go).
var goldenNames = []string{"qwen3", "llama3", "llama2"}

// tokenizers under test, loaded once per test binary (loading takes ~1 s).
var (
	loadOnce sync.Once
	loaded   map[string]*Tokenizer
	loadErr  error
)

func testTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	loadOnce.Do(func() {
		loaded = map[string]*Tokenizer{}
		for _, n := range goldenNames {
			tk, err := Load(filepath.Join(testdataDir, n))
			if err != nil {
				loadErr = err
				return
			}
			loaded[n] = tk
		}
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded[name]
}

type goldenFile struct {
	Reference  string `json:"reference"`
	Tokenizer  string `json:"tokenizer"`
	SHA256     string `json:"tokenizer_json_sha256"`
	VocabSize  int    `json:"vocab_size"`
	Cases      []goldenCase
	DecodeCase []struct {
		IDs                []int   `json:"ids"`
		Decoded            string  `json:"decoded"`
		DecodedSkipSpecial string  `json:"decoded_skip_special"`
		Continued          *string `json:"continued"`
	} `json:"decode_cases"`
}

type goldenCase struct {
	Name               string `json:"name"`
	Text               string `json:"text"`
	IDs                []int  `json:"ids"`
	IDsNoSpecial       []int  `json:"ids_no_special"`
	Decoded            string `json:"decoded"`
	DecodedSkipSpecial string `json:"decoded_skip_special"`
	// ContinuedSkipSpecial is the decode without the decoder's Strip (only
	// where it has one): what StreamDecoder gives.
	ContinuedSkipSpecial *string `json:"continued_skip_special"`
	// Continued is the decode of IDs without the decoder's Strip, special
	// tokens kept (differential.mjs writes it).
	Continued *string `json:"continued"`
}

func readGolden(t testing.TB, name string) *goldenFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir, "golden", name+".json"))
	if err != nil {
		t.Fatalf("%v; %s", err, rerun)
	}
	var g goldenFile
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("golden/%s.json: %v; %s", name, err, rerun)
	}
	return &g
}

// sha256OfGzip hashes the decompressed content of a .gz file.
func sha256OfGzip(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, zr); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TestGolden compares Encode and Decode with Hugging Face's JavaScript
// tokenizers on the real Qwen3, Llama 3.1 and llama2-package (Mistral 7B's
// vocabulary in Llama 2's kind of file) files: exact ids and text.
func TestGolden(t *testing.T) {
	for _, name := range goldenNames {
		t.Run(name, func(t *testing.T) {
			g := readGolden(t, name)
			sum, err := sha256OfGzip(filepath.Join(testdataDir, name, "tokenizer.json.gz"))
			if err != nil {
				t.Fatal(err)
			}
			if sum != g.SHA256 {
				t.Fatalf("testdata/tokenizers/%s/tokenizer.json.gz holds a tokenizer.json with sha256 %s, golden was made from %s; %s", name, sum, g.SHA256, rerun)
			}
			checkGolden(t, testTokenizer(t, name), g)
		})
	}
}

// checkGolden compares tk's Encode, Decode and StreamDecoder with the
// reference's output in g: exact ids and text.
func checkGolden(t *testing.T, tk *Tokenizer, g *goldenFile) {
	dropJSOnly(tk, g)
	if tk.VocabSize() != g.VocabSize {
		t.Errorf("VocabSize() = %d, reference %d", tk.VocabSize(), g.VocabSize)
	}
	if len(g.Cases) < 50 {
		t.Fatalf("golden file has only %d cases; %s", len(g.Cases), rerun)
	}
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDs) {
				t.Errorf("Encode(%q, true)\n got  %v\n want %v (%s)", c.Text, got, c.IDs, g.Reference)
			}
			if got := tk.Encode(c.Text, false); !slices.Equal(got, c.IDsNoSpecial) {
				t.Errorf("Encode(%q, false)\n got  %v\n want %v (%s)", c.Text, got, c.IDsNoSpecial, g.Reference)
			}
			if got := tk.Decode(c.IDs, false); got != c.Decoded {
				t.Errorf("Decode(%v, false) = %q, want %q", c.IDs, got, c.Decoded)
			}
			if got := tk.Decode(c.IDs, true); got != c.DecodedSkipSpecial {
				t.Errorf("Decode(%v, true) = %q, want %q", c.IDs, got, c.DecodedSkipSpecial)
			}
			want := c.DecodedSkipSpecial
			if c.ContinuedSkipSpecial != nil {
				want = *c.ContinuedSkipSpecial
			}
			if got := streamDecode(tk, c.IDs, true); got != want {
				t.Errorf("StreamDecoder over %v = %q, want %q", c.IDs, got, want)
			}
		})
	}
	for i, c := range g.DecodeCase {
		if got := tk.Decode(c.IDs, false); got != c.Decoded {
			t.Errorf("decode_cases[%d]: Decode(%v, false) = %q, want %q", i, c.IDs, got, c.Decoded)
		}
		if got := tk.Decode(c.IDs, true); got != c.DecodedSkipSpecial {
			t.Errorf("decode_cases[%d]: Decode(%v, true) = %q, want %q", i, c.IDs, got, c.DecodedSkipSpecial)
		}
		want := c.Decoded
		if c.Continued != nil {
			want = *c.Continued
		}
		if got := streamDecode(tk, c.IDs, false); got != want {
			t.Errorf("decode_cases[%d]: StreamDecoder over %v = %q, want %q", i, c.IDs, got, want)
		}
	}
}

// dropJSOnly drops from g the case a piece tokenizer cannot match. The
// reference's text is a JavaScript string, where a lone surrogate is a
// character of its own that a piece vocabulary lacks, spelled by the byte
// tokens of U+FFFD; in Go (and in any UTF-8 input, JSON's "\ud800"
// included) it is U+FFFD itself, which the vocabulary has. Byte-level
// tokenizers spell both the same way.
func dropJSOnly(tk *Tokenizer, g *goldenFile) {
	if tk.pieces != nil {
		g.Cases = slices.DeleteFunc(g.Cases, func(c goldenCase) bool { return c.Name == "edge_lone_surrogate" })
	}
}

func streamDecode(tk *Tokenizer, ids []int, skipSpecial bool) string {
	d := tk.NewStreamDecoder(skipSpecial)
	var s string
	for _, id := range ids {
		s += d.Add(id)
	}
	return s + d.Flush()
}

// TestEncodeWithOffsets: on every golden case the ids equal Encode's, the
// spans run forward and, stitched together, give back the text; where no
// normalization happened a whole-character token's span holds its bytes.
func TestEncodeWithOffsets(t *testing.T) {
	for _, name := range goldenNames {
		checkOffsets(t, readGolden(t, name), testTokenizer(t, name))
	}
}

func checkOffsets(t *testing.T, g *goldenFile, tk *Tokenizer) {
	dropJSOnly(tk, g)
	name := g.Tokenizer
	for _, c := range g.Cases {
		ids, spans := tk.EncodeWithOffsets(c.Text, true)
		if !slices.Equal(ids, c.IDs) || len(spans) != len(ids) {
			t.Fatalf("%s/%s: EncodeWithOffsets ids %v (%d spans), want %v", name, c.Name, ids, len(spans), c.IDs)
		}
		text := validUTF8(c.Text)
		var stitched []byte
		end := 0
		for i, sp := range spans {
			if sp.Start < 0 || sp.End < sp.Start || sp.End > len(text) || (i > 0 && sp.Start < spans[i-1].Start) {
				t.Fatalf("%s/%s: span %d = %v out of order (previous %v, len %d)", name, c.Name, i, sp, spans[max(i-1, 0)], len(text))
			}
			if sp.End > end {
				stitched = append(stitched, text[max(sp.Start, end):sp.End]...)
				end = sp.End
			}
			if b, ok := tk.TokenBytes(ids[i]); ok && utf8.Valid(b) && tk.norm.apply(text) == text && sp.End > sp.Start && text[sp.Start:sp.End] != string(b) {
				t.Errorf("%s/%s: token %d (%q) has span %v = %q", name, c.Name, i, b, sp, text[sp.Start:sp.End])
			}
		}
		if string(stitched) != text {
			t.Errorf("%s/%s: stitched spans %q, want %q", name, c.Name, stitched, text)
		}
	}
}
