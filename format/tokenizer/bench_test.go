package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
)

// benchText is the golden corpus repeated: prose, code, CJK, emoji, numbers
// and whitespace runs. internal/bench/tokbench measures a larger corpus
// against the JavaScript reference.
func benchText(b *testing.B) string {
	var sb strings.Builder
	g := readGolden(b, "qwen3")
	for sb.Len() < 1<<20 {
		for _, c := range g.Cases {
			sb.WriteString(c.Text)
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	for _, name := range []string{"qwen3", "llama3"} {
		tk := testTokenizer(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var ids []int
			for b.Loop() {
				ids = tk.AppendEncode(ids[:0], text, false)
			}
			b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkLoad measures what every stage pays at start: reading Qwen3's
// tokenizer.json.gz (151,669 tokens, 151,387 merges) into a Tokenizer.
func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(testdataDir, "qwen3")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
