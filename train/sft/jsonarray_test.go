package sft

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestJSONArrayFileSaysWhatToDo: sft takes .json files as JSON Lines, but
// a .json chat file is as often one JSON array, or objects pretty-printed
// over several lines (both of which Hugging Face's json loader reads).
// Either is refused as bad input that says so and how to convert it; the
// error was "not a JSON object: unexpected end of JSON input" (or "cannot
// unmarshal array"), about line 1.
func TestJSONArrayFileSaysWhatToDo(t *testing.T) {
	dir, md, _ := setup(t)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	row := `{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}`
	for name, body := range map[string]string{
		"array.json":    "[" + row + ", " + row + "]\n",
		"indented.json": "[\n  " + row + ",\n  " + row + "\n]\n",
		"pretty.jsonl":  "{\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"q\"}\n  ]\n}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(context.Background(), text, fileset.Files(p), "all", nil, layout.Options{}, nil, nil)
		want := "JSON array"
		if strings.HasPrefix(body, "{") {
			want = "over several lines"
		}
		if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(errText(err), want) || !strings.Contains(errText(err), "one JSON object per line") || !strings.Contains(errText(err), name) {
			t.Errorf("%s: %v; want bad input naming it, saying %q and that it needs one JSON object per line", name, err, want)
		}
	}
}

// errText is err's text, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
