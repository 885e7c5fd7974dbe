package proxy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestNegativeSizeLimitsRefused: a negative --max-body-bytes or
// --max-response-bytes is bad usage, named, as a negative --group-size is.
// Each started a proxy with the default limit in its place, without a
// word, where the user had asked for a limit of their own.
func TestNegativeSizeLimitsRefused(t *testing.T) {
	for _, tc := range []struct {
		flag string
		o    proxy.Options
	}{
		{"--max-body-bytes -1", proxy.Options{MaxBodyBytes: -1}},
		{"--max-response-bytes -5", proxy.Options{MaxResponseBytes: -5}},
	} {
		o := tc.o
		o.Upstream, o.OutDir, o.Run = "http://127.0.0.1:1/v1", t.TempDir(), "px"
		_, err := proxy.New(o)
		if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s: got %v; want a usage error naming %s", tc.flag, err, tc.flag)
		}
	}
}
