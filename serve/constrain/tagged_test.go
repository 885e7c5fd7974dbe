package constrain

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// callCases are two functions' calls, {"name":…,"arguments":…}, each
// with its own argument schema; "get_time" begins "get_timezone" past the
// quote only, so the prefixes still tell them apart.
func callCases(t testing.TB) []Case {
	t.Helper()
	return []Case{
		{Prefix: `{"name":"get_weather","arguments":`, Value: compileT(t, `{"type":"object","properties":{"city":{"type":"string","maxLength":3}}}`), Suffix: "}"},
		{Prefix: `{"name":"get_time","arguments":`, Value: compileT(t, `{"type":"object","properties":{"tz":{"enum":["utc","cet"]}}}`), Suffix: "}"},
		{Prefix: `{"name":"get_timezone","arguments":`, Value: Object(), Suffix: "}"},
	}
}

// TestTagged: a Tagged document's value follows the schema its prefix
// picks; another case's arguments, or none, are refused.
func TestTagged(t *testing.T) {
	s, err := Tagged(callCases(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, good := range []string{
		`{"name":"get_weather","arguments":{"city":"Rom"}}`,
		`{"name":"get_time","arguments":{"tz":"utc"}}`,
		`{"name":"get_timezone","arguments":{"x":[1,{}]}}`,
	} {
		if !accepts(s, good) {
			t.Errorf("refused %s", good)
		}
	}
	for _, bad := range []string{
		`{"name":"get_weather","arguments":{"tz":"utc"}}`,
		`{"name":"get_time","arguments":{"city":"Rom"}}`,
		`{"name":"get_weather","arguments":{"city":"Roma"}}`,
		`{"name":"get_time","arguments":{"tz":"utc"}}}`,
		`{"name":"get_date","arguments":{}}`,
		`{"name":"get_time"}`,
	} {
		if accepts(s, bad) {
			t.Errorf("accepted %s", bad)
		}
	}
	if _, err := Tagged([]Case{{Prefix: "ab", Value: Object(), Suffix: "}"}, {Prefix: "abc", Value: Object(), Suffix: "}"}}); err == nil {
		t.Error("a prefix that begins another was taken")
	}
}

// TestTaggedWalks: random walks under a budget end in a call whose
// arguments fit the named function's schema, and at every state met
// minBytes is exact (some byte lowers it by one, none by more).
func TestTaggedWalks(t *testing.T) {
	cases := callCases(t)
	s, err := Tagged(cases)
	if err != nil {
		t.Fatal(err)
	}
	v := multiVocab()
	seen := map[string]bool{}
	for seed := range 30 {
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		budget := s.minLen + 1 + seed*3
		out, _, done := walkTokens(NewJSON(v, []int32{eosID}, s).WithMaxTokens(budget), v, rng, budget)
		if !done {
			t.Fatalf("seed %d: no end within %d tokens: %q", seed, budget, out)
		}
		var call struct {
			Name      string
			Arguments json.RawMessage
		}
		if err := json.Unmarshal([]byte(out), &call); err != nil {
			t.Fatalf("seed %d: %q: %v", seed, out, err)
		}
		seen[call.Name] = true
		for _, c := range cases {
			if strings.HasPrefix(out, c.Prefix) && !accepts(c.Value, string(call.Arguments)) {
				t.Fatalf("seed %d: %q: arguments do not fit %s's schema", seed, out, call.Name)
			}
		}
	}
	if len(seen) < 2 {
		t.Errorf("walks called only %v", seen)
	}
	for _, prefix := range []string{``, `{"name":"get_ti`, `{"name":"get_time","arguments":`, `{"name":"get_weather","arguments":{"city":"R`, `{"name":"get_time","arguments":{"tz":"cet"}`} {
		m := newMachine(s)
		for i := range len(prefix) {
			if !m.feed(prefix[i]) {
				t.Fatalf("prefix %q refused", prefix)
			}
		}
		for k := m.minBytes(); k > 0; k-- {
			var next *machine
			for b := range 256 {
				h := m.clone()
				if h.feed(byte(b)) {
					if got := h.minBytes(); got < k-1 {
						t.Fatalf("after %q: byte %q lowers minBytes from %d to %d", prefix, byte(b), k, got)
					} else if got == k-1 && next == nil {
						next = &h
					}
				}
			}
			if next == nil {
				t.Fatalf("after %q: no byte lowers minBytes %d", prefix, k)
			}
			m = *next
		}
		if !m.complete() {
			t.Fatalf("after %q: the shortest completion leaves the document open", prefix)
		}
	}
}
