package chattemplate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
)

const (
	templatesDir = "../../testdata/templates"
	rerun        = "rerun: cd testdata/templates/js && npm ci && node golden.mjs"
)

var goldenModels = []string{"qwen3", "qwen2.5", "llama3.1", "chatml", "gemma3"}

type goldenCase struct {
	Description         string            `json:"description"`
	Messages            []chatmsg.Message `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	Kwargs              map[string]json.RawMessage
}

func readCase(t *testing.T, path string) Input {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c goldenCase
	var kw struct {
		Kwargs map[string]json.RawMessage `json:"kwargs"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(b, &kw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	in := Input{Messages: c.Messages, Tools: c.Tools, AddGenerationPrompt: c.AddGenerationPrompt}
	if len(kw.Kwargs) > 0 {
		in.Kwargs = map[string]any{}
		for k, v := range kw.Kwargs {
			in.Kwargs[k] = v
		}
	}
	return in
}

// checkProvenance verifies that the golden files are the ones the script
// wrote (PROVENANCE.json lists their sha256).
func checkProvenance(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(templatesDir, "golden", "PROVENANCE.json"))
	if err != nil {
		t.Fatalf("%v (%s)", err, rerun)
	}
	var p struct {
		Inputs  map[string]string `json:"inputs"`
		Outputs map[string]string `json:"outputs"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, set := range []map[string]string{p.Inputs, p.Outputs} {
		for rel, want := range set {
			data, err := os.ReadFile(filepath.Join(templatesDir, rel))
			if err != nil {
				t.Fatalf("%v (%s)", err, rerun)
			}
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != want {
				t.Errorf("testdata/templates/%s changed since the golden files were written (sha256 %s, recorded %s); %s", rel, got, want, rerun)
			}
		}
	}
	return p.Outputs
}

// TestGolden renders every case with every template and demands the exact
// bytes @huggingface/jinja produced.
func TestGolden(t *testing.T) {
	outputs := checkProvenance(t)
	cases, err := filepath.Glob(filepath.Join(templatesDir, "cases", "*.json"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	checked := 0
	for _, model := range goldenModels {
		tmpl, err := Load(filepath.Join(templatesDir, model))
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range cases {
			name := strings.TrimSuffix(filepath.Base(cp), ".json")
			t.Run(model+"/"+name, func(t *testing.T) {
				in := readCase(t, cp)
				txt := filepath.Join(templatesDir, "golden", model, name+".txt")
				errFile := filepath.Join(templatesDir, "golden", model, name+".error")
				got, err := tmpl.Render(t.Context(), in)
				if want, rerr := os.ReadFile(txt); rerr == nil {
					if err != nil {
						t.Fatalf("render: %v", err)
					}
					if got != string(want) {
						t.Fatalf("rendering differs from %s (%s)\n%s", txt, rerun, firstDiff(got, string(want)))
					}
				} else if want, rerr := os.ReadFile(errFile); rerr == nil {
					var raised *RaisedError
					if !errors.As(err, &raised) {
						t.Fatalf("want the template to raise %q, got output %q, err %v", bytes.TrimSpace(want), got, err)
					}
					if raised.Message != strings.TrimSpace(string(want)) {
						t.Errorf("raised %q, reference raised %q", raised.Message, bytes.TrimSpace(want))
					}
				} else {
					t.Fatalf("no golden file for %s/%s (%s)", model, name, rerun)
				}
				checked++

				// The same conversation with tool-call arguments given as
				// JSON strings (the OpenAI wire form) renders the same.
				if !hasToolCalls(in) {
					return
				}
				asStrings := in
				asStrings.Messages = append([]chatmsg.Message(nil), in.Messages...)
				for i := range asStrings.Messages {
					calls := append([]chatmsg.ToolCall(nil), asStrings.Messages[i].ToolCalls...)
					for j := range calls {
						var compact bytes.Buffer
						if err := json.Compact(&compact, []byte(calls[j].Arguments)); err != nil {
							t.Fatal(err)
						}
						calls[j].Arguments = compact.String()
					}
					asStrings.Messages[i].ToolCalls = calls
				}
				got2, err2 := tmpl.Render(t.Context(), asStrings)
				if got2 != got || (err2 == nil) != (err == nil) {
					t.Errorf("arguments as compact JSON text render differently:\n%s", firstDiff(got2, got))
				}
			})
		}
	}
	if checked != len(outputs) {
		t.Errorf("checked %d renderings, PROVENANCE.json lists %d (%s)", checked, len(outputs), rerun)
	}
}

func hasToolCalls(in Input) bool {
	for _, m := range in.Messages {
		if len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// firstDiff shows where two strings first differ, with some context.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-80)
	return "first difference at byte " + strconv.Itoa(i) + ":\n got: " + quoteRange(got, lo, i+80) + "\nwant: " + quoteRange(want, lo, i+80)
}

func quoteRange(s string, lo, hi int) string {
	hi = min(hi, len(s))
	if lo > hi {
		return `""`
	}
	return strconv.Quote(s[lo:hi])
}
