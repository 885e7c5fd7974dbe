package serve

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/ref"
)

// TestNegativeKVBudgetRefused: NewServer refuses a negative KVCacheBytes,
// naming it, as hone-serve refuses --kv-cache-bytes -1. The engine read
// any budget not above 0 as no limit, so a library caller's negative
// budget served with the KV cache unbounded, without a word.
func TestNegativeKVBudgetRefused(t *testing.T) {
	s, err := NewServer(Options{Model: tinyDir(t), Backend: ref.New(), KVCacheBytes: -1})
	if err == nil {
		s.Engine().Shutdown(t.Context())
		t.Fatal("NewServer took KVCacheBytes -1 (served with no KV cache limit), want an error")
	}
	if !strings.Contains(err.Error(), "KVCacheBytes") {
		t.Errorf("error %q does not name KVCacheBytes", err)
	}
}
