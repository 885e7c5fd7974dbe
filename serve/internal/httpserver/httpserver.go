// Package httpserver builds the net/http server both of hone-serve's
// fronts (the embedded engine's, serve, and vLLM's, serve/vllm) listen
// with, so that their connection limits are set once.
package httpserver

import (
	"log/slog"
	"net/http"
	"time"
)

// KeepAliveIdle is how long a kept-alive connection may wait for its next
// request before the server closes it: vLLM's (uvicorn's keep-alive
// timeout, 5 s). Without it a client that leaves connections idle holds
// each one, a socket and a goroutine, for as long as it likes, since
// ReadHeaderTimeout bounds only the wait for a connection's first request.
// Clients' pools see the close and open a new connection for the next
// request.
const KeepAliveIdle = 5 * time.Second

// ReadHeader bounds the wait for a connection's first request line and
// headers: a client that opens a connection and sends nothing holds it
// no longer.
const ReadHeader = 30 * time.Second

// New is the server for h, its own errors (a bad TLS handshake, a
// malformed request) logged on log as warnings.
func New(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeader, IdleTimeout: KeepAliveIdle, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}
