package vllm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hone-rl/hone/format/urlmask"
)

// keepAliveIdle is how long a kept-alive connection may wait for its next
// request before the front closes it: vLLM's own (uvicorn's keep-alive
// timeout, 5 s). Without it a client that leaves connections idle holds
// each one, a socket and a goroutine, for as long as it likes, since
// ReadHeaderTimeout bounds only the wait for a connection's first request.
const keepAliveIdle = 5 * time.Second

// Serve serves the front on ln, with Watch running, until ctx ends; then
// it drains: new requests get 503 while those in flight (streams
// included) finish, for at most drain.
func (f *Front) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	hs := &http.Server{Handler: f, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: keepAliveIdle, ErrorLog: slog.NewLogLogger(f.o.Log.Handler(), slog.LevelWarn)}
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
