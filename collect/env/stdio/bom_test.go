package stdio_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env/stdio"
)

// A program whose stdout starts with a UTF-8 byte-order mark (Python's
// utf-8-sig encoding, as PYTHONIOENCODING=utf-8-sig sets it, writes one
// before its first byte) failed its first response with the hint for a
// print before it, which it never made: the error now says the program
// wrote a byte-order mark.
func TestNotJSONByteOrderMark(t *testing.T) {
	body := `import json, sys
sys.stdout.reconfigure(encoding="utf-8-sig")
for line in sys.stdin:
    print(json.dumps({"name": "bom"}), flush=True)
`
	script := filepath.Join(t.TempDir(), "env.py")
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := stdio.New(context.Background(), []string{python(t), "-S", script}, "")
	if err == nil {
		t.Fatal("hello succeeded")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "byte-order mark") || strings.Contains(err.Error(), "a print before the response") {
		t.Errorf("error %q\nwants it to name the byte-order mark, not a print", err)
	}
}

// A print whose text starts with NaN or Infinity ("NaN values in batch
// 3") is a print before the response, not a NaN in one: it got the hint
// that NaN is not JSON, sending its author after a reward never written.
func TestNotJSONTextStartingNaN(t *testing.T) {
	for _, pre := range []string{"NaN values in batch 3", "Infinity loop guard on"} {
		t.Run(pre, func(t *testing.T) {
			_, err := playSayingHi(t, valuesEnv(t, pre, `{}`), "s1")
			if err == nil {
				t.Fatal("the episode succeeded")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "stdout carries responses only") || strings.Contains(err.Error(), "NaN and Infinity are not JSON") {
				t.Errorf("error %q\nwants the print hint, not the NaN one", err)
			}
		})
	}
}
