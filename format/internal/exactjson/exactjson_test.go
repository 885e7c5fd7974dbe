package exactjson

import (
	"encoding/json"
	"strings"
	"testing"
)

type sample struct {
	RopeTheta float64 `json:"rope_theta"`
	Heads     int     `json:"num_heads,omitempty"`
	Plain     string
	Skipped   string `json:"-"`
}

func TestUnmarshalExactNames(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     sample
	}{
		{"exact", `{"rope_theta": 5, "num_heads": 2, "Plain": "p"}`, sample{RopeTheta: 5, Heads: 2, Plain: "p"}},
		{"other case ignored", `{"Rope_Theta": 5, "NUM_HEADS": 2, "plain": "p"}`, sample{}},
		{"other case after the key does not win", `{"rope_theta": 5, "ROPE_THETA": 7}`, sample{RopeTheta: 5}},
		{"a repeated key keeps its last value", `{"rope_theta": 5, "rope_theta": 7}`, sample{RopeTheta: 7}},
		{"json:\"-\" is never read", `{"Skipped": "x", "-": "y"}`, sample{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got sample
			if err := Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s: got %+v, want %+v", tc.in, got, tc.want)
			}
			// encoding/json itself differs on the case-folded inputs,
			// which is why this package exists.
			var plain sample
			if err := json.Unmarshal([]byte(tc.in), &plain); err != nil {
				t.Fatal(err)
			}
			if tc.name == "other case ignored" && plain == tc.want {
				t.Errorf("encoding/json now reads %s by exact names; this package may be unneeded", tc.in)
			}
		})
	}
}

func TestUnmarshalErrors(t *testing.T) {
	var s sample
	for _, in := range []string{`[1]`, `{"rope_theta": "x"}`, `{`} {
		if err := Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	if err := Unmarshal([]byte(`{}`), s); err == nil {
		t.Error("a struct value, not a pointer: no error")
	}
}

// TestUnmarshalInvalidUTF8: Python's json, reading the file as UTF-8
// text, fails on a byte that is not; encoding/json would read it as
// U+FFFD, so the same file would hold another string here.
func TestUnmarshalInvalidUTF8(t *testing.T) {
	var s sample
	for _, in := range []string{"{\"Plain\": \"a\xffb\"}", "{\"other\": \"\xc3\"}", "{\"rope_theta\": 1}\xfe"} {
		err := Unmarshal([]byte(in), &s)
		if err == nil || !strings.Contains(err.Error(), "not valid UTF-8 at byte") {
			t.Errorf("%q: %v", in, err)
		}
	}
	if err := Unmarshal([]byte(`{"Plain": "é ✓"}`), &s); err != nil || s.Plain != "é ✓" {
		t.Errorf("valid UTF-8: %v %q", err, s.Plain)
	}
}
