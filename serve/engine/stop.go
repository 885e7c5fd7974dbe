package engine

// stopTable is a request's stop strings with each one's Knuth–Morris–Pratt
// failure function, built once per request and shared by its sequences,
// each of which matches with a stopMatch of its own. Matching byte by byte
// as the text grows costs each token the length of its own text (times the
// number of stop strings), not the stop strings' length: searching a
// window of the longest one's length and rebuilding the tables at every
// token cost a 1 MB stop string 1 MB of work and 8 MB of allocation per
// token, on the goroutine that serves every request.
type stopTable struct {
	stops  []string
	border [][]int32 // border[j][i]: the longest proper border of stops[j][:i+1]
}

// newStopTable returns the table of stops, or nil when there are none.
func newStopTable(stops []string) *stopTable {
	if len(stops) == 0 {
		return nil
	}
	t := &stopTable{stops: stops, border: make([][]int32, len(stops))}
	for j, st := range stops {
		b := make([]int32, len(st))
		for i, k := 1, int32(0); i < len(st); i++ {
			for k > 0 && st[i] != st[k] {
				k = b[k-1]
			}
			if st[i] == st[k] {
				k++
			}
			b[i] = k
		}
		t.border[j] = b
	}
	return t
}

// match starts a sequence's matching, at empty text (nil for a nil table).
func (t *stopTable) match() *stopMatch {
	if t == nil {
		return nil
	}
	return &stopMatch{t: t, state: make([]int32, len(t.stops))}
}

// stopMatch is where a sequence's text stands in each stop string.
type stopMatch struct {
	t *stopTable
	// state[j] is the length of the longest prefix of stop string j that
	// ends the text fed so far; it is shorter than the string as long as
	// no match was found.
	state []int32
	// quiet is the offset up to which a match is not reported: the text of
	// the first Params.MinTokens tokens, where vLLM's min_tokens lets no
	// stop string end. A match ending there is passed over and matching
	// goes on.
	quiet int
	// matched is the length of the stop string feed last reported.
	matched int
}

// feed takes the text's next bytes, add, which begin at offset base of the
// text, and returns the offset where a stop string that ends within them
// begins, or -1 when none does (m.matched is then that string's length).
// The strings are tried in their list's order and the first found wins,
// even when a later one begins earlier, as vLLM's stop check takes them:
// a client's stop list gets the answer vLLM would give it. After a match
// the sequence stops, and m is not fed again.
func (m *stopMatch) feed(add string, base int) int {
	for j, st := range m.t.stops {
		if len(st) == 0 { // matches at once, before the new bytes
			if m.quiet == 0 || base+len(add) > m.quiet {
				m.matched = 0
				return max(base, m.quiet)
			}
			continue
		}
		b, k := m.t.border[j], m.state[j]
		for i := 0; i < len(add); i++ {
			for k > 0 && add[i] != st[k] {
				k = b[k-1]
			}
			if add[i] == st[k] {
				k++
			}
			if int(k) == len(st) && base+i+1 <= m.quiet {
				k = b[k-1] // ends within the quiet text: look for the next one
				continue
			}
			if int(k) == len(st) {
				m.matched = len(st)
				return base + i + 1 - len(st)
			}
		}
		m.state[j] = k
	}
	return -1
}

// hold is the length of the longest end of the text fed so far that is a
// proper prefix of a stop string: text that may yet become one, held back
// from the client (0 for a nil m).
func (m *stopMatch) hold() int {
	if m == nil {
		return 0
	}
	best := int32(0)
	for _, k := range m.state {
		best = max(best, k)
	}
	return int(best)
}
