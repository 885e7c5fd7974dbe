package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestStopStringListOrder: when two stop strings are found in the text a
// token adds, the one listed first ends the choice, as vLLM's stop check
// takes them in list order, even where the other begins earlier; the text
// was cut before whichever began first. The tiny model's tokens are bytes,
// so the two are "y" and "xy" for the first letter y of the greedy text
// (kept to lowercase letters by allowed_token_ids) that follows another,
// x, and has not come before.
func TestStopStringListOrder(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	var letters []int
	for c := 'a'; c <= 'z'; c++ {
		ids := ts.s.tok.Encode(string(c), false)
		if len(ids) != 1 {
			t.Fatalf("%q is tokens %v, want one", c, ids)
		}
		letters = append(letters, ids[0])
	}
	allowed, _ := json.Marshal(letters)
	ask := func(extra string) sampledChoice {
		t.Helper()
		return ts.oneChoice(t, fmt.Sprintf(`{"model":"tiny","prompt":"hi","temperature":0,"ignore_eos":true,"return_token_ids":true,
			"max_tokens":24,"allowed_token_ids":%s%s}`, allowed, extra))
	}
	text := ask("").Text
	at := 1
	for at < len(text) && (text[at] == text[at-1] || strings.IndexByte(text[:at], text[at]) >= 0) {
		at++
	}
	if at == len(text) {
		t.Fatalf("greedy text %q has no new letter after another", text)
	}
	x, y := text[at-1:at], text[at:at+1]
	for _, tc := range []struct {
		stops []string
		want  string
	}{
		{[]string{y, x + y}, text[:at]},   // the first listed begins later
		{[]string{x + y, y}, text[:at-1]}, // and earlier
	} {
		stops, _ := json.Marshal(tc.stops)
		c := ask(`,"stop":` + string(stops))
		if c.Text != tc.want || c.FinishReason != "stop" {
			t.Errorf("stop %s over %q: %q (%s), want %q, cut at the first listed", stops, text, c.Text, c.FinishReason, tc.want)
		}
	}
}
