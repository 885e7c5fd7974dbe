package vllm

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hone-rl/hone/serve/internal/httpserver"
)

// TestFrontClosesIdleKeepAliveConnection: the vLLM front closes a
// kept-alive connection left idle after a request once httpserver.KeepAliveIdle
// passes, as vLLM itself does (5 s). Before, it stayed open for as long as
// the client kept it: ReadHeaderTimeout bounds only the wait for a
// connection's first request.
func TestFrontClosesIdleKeepAliveConnection(t *testing.T) {
	_, f, _ := newFixture(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, ln, 5*time.Second) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /no-such-route HTTP/1.1\r\nHost: hone\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatalf("%d answered with Connection: close; want a kept-alive connection", resp.StatusCode)
	}
	wait := httpserver.KeepAliveIdle + 20*time.Second
	start := time.Now()
	conn.SetReadDeadline(start.Add(wait))
	_, err = br.ReadByte()
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("an idle keep-alive connection was still open after %v", wait)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read %v, want EOF (closed by the front)", err)
	}
	if took := time.Since(start); took < httpserver.KeepAliveIdle-time.Second {
		t.Fatalf("idle connection closed after %v, before httpserver.KeepAliveIdle (%v)", took, httpserver.KeepAliveIdle)
	}
}
