package proxy_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestDrainTimeout: at Ctrl-C, a request still in flight when DrainTimeout
// (hone-collect proxy --drain-timeout) passes is cut off, a warning says
// how many were, and Run returns the deadline error (exit 130), as
// hone-serve does. Before, the cap was a fixed 30s, and the requests it
// cut off went without a word, Run returning nil.
func TestDrainTimeout(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	// An upstream that answers only when the test ends: a generation
	// longer than the drain.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	defer up.Close()
	defer close(release)
	var log waitfor.Buffer
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- proxy.Run(ctx, proxy.Options{Upstream: up.URL + "/v1", OutDir: t.TempDir(), Listen: "127.0.0.1:0",
			DrainTimeout: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil)),
			OnListen: func(a string) { addr <- a }})
	}()
	base := "http://" + <-addr
	cut := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("X-Hone-Trajectory", "t1")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		cut <- err
	}()
	<-entered
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "drain") {
			t.Fatalf("Run: %v, want the drain's deadline error", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("Run did not return within its drain timeout")
	}
	if !strings.Contains(log.String(), "drain timed out") || !strings.Contains(log.String(), "in_flight=1") {
		t.Fatalf("log says nothing of the request cut off:\n%s", log.String())
	}
	if err := <-cut; err == nil {
		t.Fatal("the request in flight at the drain timeout was answered, want its connection closed")
	}
}

// Regression: --drain-timeout 0 (or a negative one) was taken for the
// default minute, as Options' zero value is: a user asking the proxy not
// to wait for the requests in flight had it wait 60s without a word. The
// flag now refuses it, naming it, as hone-collect's --start-timeout does.
func TestDrainTimeoutFlagMustBePositive(t *testing.T) {
	for _, v := range []string{"0", "-1s"} {
		var o proxy.Options
		fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.AddFlags(fs)
		err := fs.Parse([]string{"--drain-timeout=" + v})
		if err == nil || !strings.Contains(err.Error(), "drain-timeout") {
			t.Errorf("--drain-timeout=%s: %v (DrainTimeout %v), want it refused, naming the flag", v, err, o.DrainTimeout)
		}
	}
	var o proxy.Options
	fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--drain-timeout=2s"}); err != nil || o.DrainTimeout != 2*time.Second {
		t.Fatalf("--drain-timeout=2s: %v, DrainTimeout %v", err, o.DrainTimeout)
	}
	if fs := fs.Lookup("drain-timeout"); fs.DefValue != proxy.DefaultDrainTimeout.String() {
		t.Fatalf("--drain-timeout's default %s, want %s", fs.DefValue, proxy.DefaultDrainTimeout)
	}
}
