package jsonnan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func find(t *testing.T, raw string) (string, string, bool) {
	t.Helper()
	var v any
	err := json.Unmarshal([]byte(raw), &v)
	if err == nil {
		t.Fatalf("%s decoded", raw)
	}
	return Find([]byte(raw), err)
}

// A top-level key that is no plain name is quoted as the nested keys are:
// a.b is NaN read as field b of a.
func TestFindQuotesTopLevelKeyThatIsNoName(t *testing.T) {
	for raw, want := range map[string]string{
		`{"reward": NaN}`:                "reward",
		`{"a.b": NaN}`:                   `["a.b"]`,
		`{"metrics": {"a.b": Infinity}}`: `metrics["a.b"]`,
		`{"two words": [1, -Infinity]}`:  `["two words"][1]`,
		`{"_x1": NaN}`:                   "_x1",
	} {
		if path, _, ok := find(t, raw); !ok || path != want {
			t.Errorf("%s: path %q, %v; want %q", raw, path, ok, want)
		}
	}
}

// The path goes into a 400's body and a row's error: a deeply nested
// value or a huge key keeps its last part only, whole runes.
func TestFindCutsALongPath(t *testing.T) {
	deep := strings.Repeat(`{"k":`, 2000) + "NaN" + strings.Repeat("}", 2000)
	huge := `{"` + strings.Repeat("é", 5000) + `": NaN}`
	for name, raw := range map[string]string{"deep": deep, "huge key": huge} {
		path, _, ok := find(t, raw)
		if !ok || len(path) > maxPath || !strings.HasPrefix(path, "…") || !utf8.ValidString(path) {
			t.Errorf("%s: path of %d bytes %.40q…, %v; want at most %d bytes starting with … in whole runes", name, len(path), path, ok, maxPath)
		}
	}
}
