package jsonnan

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestFindCostLinearInDepth: a NaN 9,000 levels deep, in a body of 45 kB
// that the proxy takes whole, built the full path one level at a time
// before cutting it to maxPath, copying the path once per level: about
// 200 MB allocated for one 400 (5,000 levels under 1.6 kB keys, 8 MB,
// the proxy's default --max-body-bytes, made 20 GB). The path is built
// from its end now, as far as the cut keeps, and the message is the same.
func TestFindCostLinearInDepth(t *testing.T) {
	raw := strings.Repeat(`{"k":`, 9000) + "NaN"
	var v any
	err := json.Unmarshal([]byte(raw), &v)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	path, _, ok := Find([]byte(raw), err)
	runtime.ReadMemStats(&after)
	full := strings.Repeat(`["k"]`, 9000) // the top-level key is k, unquoted, but the cut leaves it out
	if want := "…" + full[len(full)-(maxPath-len("…")):]; !ok || path != want {
		t.Fatalf("path %q, %v; want %q", path, ok, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100*uint64(len(raw)) {
		t.Errorf("Find allocated %d bytes for a body of %d", alloc, len(raw))
	}
}
