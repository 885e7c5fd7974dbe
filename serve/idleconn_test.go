package serve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/serve/internal/httpserver"
)

// TestIdleKeepAliveConnectionClosed: a client that made a request and
// then left its keep-alive connection idle has it closed after
// httpserver.KeepAliveIdle, as vLLM's server closes it (5 s). Before, the connection
// stayed open for as long as the client kept it, each one a socket and a
// goroutine: ReadHeaderTimeout bounds only the wait for a connection's
// first request, not the wait between requests.
func TestIdleKeepAliveConnectionClosed(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: hone\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("/health: %d, close %v; want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	// The connection now waits for a next request that never comes: the
	// server must close it (EOF) well before this deadline.
	wait := httpserver.KeepAliveIdle + 20*time.Second
	start := time.Now()
	conn.SetReadDeadline(start.Add(wait))
	_, err = br.ReadByte()
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("an idle keep-alive connection was still open after %v", wait)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read %v, want EOF (closed by the server)", err)
	}
	if took := time.Since(start); took < httpserver.KeepAliveIdle-time.Second {
		t.Fatalf("idle connection closed after %v, before httpserver.KeepAliveIdle (%v)", took, httpserver.KeepAliveIdle)
	}
}
