package stdio_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env/stdio"
)

// valuesEnv is a Python program that answers hello, then reset with an
// opening message, then step with the response Python's json.dumps makes
// of the expression stepExpr (json and math imported), after printing
// preReset to stdout before reset's answer when it is not empty.
func valuesEnv(t *testing.T, preReset, stepExpr string) *stdio.Env {
	t.Helper()
	body := `import json, math, sys
for line in sys.stdin:
    op = json.loads(line)["op"]
    if op == "hello":
        out = {"name": "values"}
    elif op == "reset":
        if ` + "'''" + preReset + "'''" + `:
            print(` + "'''" + preReset + "'''" + `, flush=True)
        out = {"messages": [{"role": "user", "content": "go"}]}
    else:
        out = ` + stepExpr + `
    print(json.dumps(out), flush=True)
`
	script := filepath.Join(t.TempDir(), "env.py")
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := stdio.New(context.Background(), []string{python(t), "-S", script}, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A response that is not JSON is quoted where its parsing failed, not
// only from its start: Python's json.dumps writes NaN and Infinity for a
// reward or metric computed as such, which JSON has not, and the quote of
// the line's first 200 bytes (a long tool result) never showed them. A
// line that is no JSON from its first byte (a debug print before the
// response) says where logs go.
func TestNotJSONQuotedWhereItFails(t *testing.T) {
	long := `{"messages": [{"role": "user", "content": "z" * 500}], "done": True, `
	for _, tc := range []struct {
		name, pre, step string
		want            []string
	}{
		{"nan-metric", "", long + `"reward": 1.0, "metrics": {"loss": float("nan")}}`, []string{`\"loss\": NaN`, "NaN and Infinity are not JSON"}},
		{"inf-reward", "", long + `"reward": -math.inf}`, []string{`\"reward\": -Infinity`, "NaN and Infinity are not JSON"}},
		{"debug-print", "DEBUG: got reset", `{}`, []string{`"DEBUG: got reset"`, "stdout carries responses only", "stderr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := playSayingHi(t, valuesEnv(t, tc.pre, tc.step), "s1")
			if err == nil {
				t.Fatal("the episode succeeded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
		})
	}
}
