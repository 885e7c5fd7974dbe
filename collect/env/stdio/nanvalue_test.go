package stdio_test

import (
	"strings"
	"testing"
)

// TestNotJSONNaNOnlyAsValue: the NaN hint is given where a NaN or Infinity
// stands as a value, and names its field; a line that fails at the letters
// elsewhere (a bad escape "\NaN" in a string, a NaN where a key goes) is
// not told that JSON has no NaN, which would send its author after a
// value the program never wrote.
func TestNotJSONNaNOnlyAsValue(t *testing.T) {
	const nanHint = "NaN and Infinity are not JSON"
	for _, tc := range []struct {
		name, pre string
		want, not []string
	}{
		{"value", `{"messages": [], "metrics": {"loss": NaN}}`, []string{nanHint, `metrics["loss"] is NaN`, "a reward or metric must be"}, nil},
		// Not a reward or metric: the hint does not say it is one.
		{"content", `{"messages": [{"role": "user", "content": NaN}]}`, []string{nanHint, `messages[0]["content"] is NaN`, "every number must be finite"}, []string{"a reward or metric"}},
		{"escape", `{"messages": [{"role": "user", "content": "C:\\NaN"}]}`, []string{"in string escape code"}, []string{nanHint}},
		{"key", `{"messages": [], NaN: 1}`, []string{"object key"}, []string{nanHint}},
		{"escape-infinity", `{"messages": [{"role": "user", "content": "x\\Infinity"}]}`, []string{"in string escape code"}, []string{nanHint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := playSayingHi(t, valuesEnv(t, tc.pre, `{}`), "s1")
			if err == nil {
				t.Fatal("the episode succeeded")
			}
			t.Log(err)
			for _, w := range append(tc.want, "not JSON") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nhas %q", err, w)
				}
			}
		})
	}
}
