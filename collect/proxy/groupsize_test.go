package proxy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestNegativeGroupSizeRefused: --group-size -4 is bad usage, named, as
// hone-collect's own --group-size refuses a size below 1. It started a
// proxy that flushed a group only on its close, as 0 does, without a
// word, where the user had asked for groups of 4.
func TestNegativeGroupSizeRefused(t *testing.T) {
	_, err := proxy.New(proxy.Options{Upstream: "http://127.0.0.1:1/v1", OutDir: t.TempDir(), Run: "px", GroupSize: -4})
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--group-size -4") {
		t.Fatalf("got %v; want a usage error naming --group-size -4", err)
	}
}
