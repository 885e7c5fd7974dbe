package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
)

// BenchmarkRenderGolden renders every case of testdata/templates/cases
// with each golden model's template, one b.N step rendering them all, so
// that a rewriter that slows the templates trainers render most shows:
//
//	go test -run '^$' -bench RenderGolden -benchmem ./format/chattemplate/
func BenchmarkRenderGolden(b *testing.B) {
	paths, err := filepath.Glob(filepath.Join(templatesDir, "cases", "*.json"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("no cases under %s (%v)", templatesDir, err)
	}
	var inputs []Input
	for _, p := range paths {
		inputs = append(inputs, benchInput(b, p))
	}
	for _, model := range goldenModels {
		b.Run(model, func(b *testing.B) {
			tmpl, err := Load(filepath.Join(templatesDir, model))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, in := range inputs {
					// Cases a template refuses (a raise_exception) cost a
					// rendering too; the golden tests check the outcomes.
					_, _ = tmpl.Render(b.Context(), in)
				}
			}
		})
	}
}

// benchInput reads a case file as the golden tests do, with testing.TB.
func benchInput(tb testing.TB, path string) Input {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var c struct {
		Messages            []chatmsg.Message          `json:"messages"`
		Tools               []json.RawMessage          `json:"tools"`
		AddGenerationPrompt bool                       `json:"add_generation_prompt"`
		Kwargs              map[string]json.RawMessage `json:"kwargs"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	in := Input{Messages: c.Messages, Tools: c.Tools, AddGenerationPrompt: c.AddGenerationPrompt}
	if len(c.Kwargs) > 0 {
		in.Kwargs = map[string]any{}
		for k, v := range c.Kwargs {
			in.Kwargs[k] = v
		}
	}
	return in
}
