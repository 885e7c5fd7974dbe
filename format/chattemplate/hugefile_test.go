package chattemplate

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLoadHugeFiles: each file Load reads (tokenizer_config.json,
// special_tokens_map.json, chat_template.jinja, chat_template.json, an
// additional_chat_templates/*.jinja) of a gigabyte (a weights file copied
// to the wrong name, a corrupt write) is refused by its size, naming the
// file and the size, not read whole into memory first.
func TestLoadHugeFiles(t *testing.T) {
	const cfg = `{"bos_token": "<s>", "chat_template": "{{ bos_token }}"}`
	for _, tc := range []struct {
		huge  string
		small map[string]string
	}{
		{"tokenizer_config.json", nil},
		{"special_tokens_map.json", map[string]string{"tokenizer_config.json": cfg}},
		{"chat_template.jinja", map[string]string{"tokenizer_config.json": cfg}},
		{"chat_template.json", map[string]string{"tokenizer_config.json": `{"bos_token": "<s>"}`}},
		{filepath.Join("additional_chat_templates", "tool_use.jinja"), map[string]string{"tokenizer_config.json": cfg}},
	} {
		dir := t.TempDir()
		for name, body := range tc.small {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, tc.huge)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(1 << 30); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = Load(dir)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "1073741824 bytes") {
			t.Errorf("%s: error %v does not name the file and its size", tc.huge, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<26 {
			t.Errorf("%s: allocated %d bytes to refuse it", tc.huge, got)
		}
	}
}
