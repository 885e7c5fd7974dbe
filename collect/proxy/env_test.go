package proxy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/internal/stageerr"
)

// The library reads no environment: without Upstream, Run refuses to start
// (a usage error) even when $OPENAI_BASE_URL is set; hone-collect proxy is
// what fills Upstream from it.
func TestRunReadsNoEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were it to start, it would stop at once
	err := proxy.Run(ctx, proxy.Options{OutDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if !errors.Is(err, stageerr.ErrUsage) {
		t.Fatalf("Run without Upstream: %v, want a usage error", err)
	}
}

// An upstream that is no http(s) URL is a usage error at start, not a
// proxy whose every forwarded request fails.
func TestRunRefusesMalformedUpstream(t *testing.T) {
	for _, up := range []string{"localhost:8000/v1", "127.0.0.1:8000", "ftp://127.0.0.1:1/v1", "http:///v1"} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // were it to start, it would stop at once
		err := proxy.Run(ctx, proxy.Options{Upstream: up, OutDir: t.TempDir(), Listen: "127.0.0.1:0"})
		if !errors.Is(err, stageerr.ErrUsage) {
			t.Errorf("Run with Upstream %q: %v, want a usage error", up, err)
		}
	}
}
