package vllm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hone-rl/hone/format/urlmask"
	"github.com/hone-rl/hone/serve/internal/httpserver"
)

// Serve serves the front on ln, with Watch running, until ctx ends; then
// it drains: new requests get 503 while those in flight (streams
// included) finish, for at most drain.
func (f *Front) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	hs := httpserver.New(f, f.o.Log)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		f.Watch(watchCtx)
	}()
	// Serve returns once Watch has: no LoRA call outlives it.
	defer func() {
		stopWatch()
		<-watched
	}()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	f.o.Log.Info("hone-serve listening in front of vLLM", "addr", ln.Addr().String(), "upstream", urlmask.Shown(f.base.String())) // a password or token in it masked
	select {
	case err := <-errc:
		return fmt.Errorf("vllm front: %w", err)
	case <-ctx.Done():
	}
	f.draining.Store(true)
	stopWatch()
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		hs.Close()
		return fmt.Errorf("vllm front: draining: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("vllm front: %w", err)
	}
	return nil
}
