package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// logSink collects a run's JSON log records and hands over the address
// of its listening line.
type logSink struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
}

// Write takes one record: slog's handlers write each record in one call.
func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	var rec struct{ Msg, Addr string }
	if json.Unmarshal(p, &rec) == nil && strings.Contains(rec.Msg, "listening") && rec.Addr != "" {
		select {
		case l.addr <- rec.Addr:
		default:
		}
	}
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// warnings returns the messages of the WARN records logged so far.
func (l *logSink) warnings() []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == "WARN" {
			out = append(out, rec.Msg)
		}
	}
	return out
}

// startRun runs hone-serve's run in this process with env as its
// environment, on a free port with JSON logs, until the test ends; it
// returns the address it listens on.
func startRun(t *testing.T, env map[string]string, args ...string) (string, *logSink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sink := &logSink{addr: make(chan string, 1)}
	done := make(chan error, 1)
	args = append(args, "--port", "0", "--log-format", "json")
	go func() { done <- run(ctx, args, func(k string) string { return env[k] }, io.Discard, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run %q: %v", args, err)
		}
	})
	select {
	case addr := <-sink.addr:
		return addr, sink
	case err := <-done:
		done <- err // for the clean-up
		t.Fatalf("run %q returned before listening: %v\n%s", args, err, sink.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("run %q logged no listening line:\n%s", args, sink.String())
	}
	return "", nil
}

// chat posts a chat request with key (none when empty) and returns the status.
func chat(t *testing.T, addr, key string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"base","messages":[]}`))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestKeysFromEnv: HONE_API_KEY and HONE_UPSTREAM_API_KEY give the keys
// when their flags are not set (a flag on the command line is visible in
// /proc/PID/cmdline); a flag, when given, wins over its variable.
func TestKeysFromEnv(t *testing.T) {
	fake := &fakeVLLM{loaded: make(chan struct{}, 1)}
	up := httptest.NewServer(fake)
	defer up.Close()
	env := map[string]string{apiKeyEnv: "envkey", upstreamKeyEnv: "upenv"}
	for _, c := range []struct {
		name       string
		flags      []string
		good, bad  string
		upstreamAs string
	}{
		{"environment", nil, "envkey", "flagkey", "Bearer upenv"},
		{"flags win", []string{"--api-key", "flagkey", "--upstream-api-key", "upflag"}, "flagkey", "envkey", "Bearer upflag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, log := startRun(t, env, append([]string{"--upstream", up.URL}, c.flags...)...)
			if st := chat(t, addr, ""); st != http.StatusUnauthorized {
				t.Errorf("no key: %d, want 401", st)
			}
			if st := chat(t, addr, c.bad); st != http.StatusUnauthorized {
				t.Errorf("key %q: %d, want 401", c.bad, st)
			}
			if st := chat(t, addr, c.good); st != http.StatusOK {
				t.Fatalf("key %q: %d, want 200\n%s", c.good, st, log)
			}
			fake.mu.Lock()
			got := fake.auths[len(fake.auths)-1]
			fake.mu.Unlock()
			if got != c.upstreamAs {
				t.Errorf("vLLM got Authorization %q, want %q", got, c.upstreamAs)
			}
		})
	}
}

// TestWarnExposed: listening beyond this machine without a key logs a
// warning at start that says how to set one; with a key, or on the
// default loopback address, nothing is logged.
func TestWarnExposed(t *testing.T) {
	fake := &fakeVLLM{loaded: make(chan struct{}, 1)}
	up := httptest.NewServer(fake)
	defer up.Close()
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		warn bool
	}{
		{"all interfaces, no key", nil, []string{"--host", "0.0.0.0"}, true},
		{"all interfaces, key in the environment", map[string]string{apiKeyEnv: "k"}, []string{"--host", "0.0.0.0"}, false},
		{"all interfaces, key flag", nil, []string{"--host", "0.0.0.0", "--api-key", "k"}, false},
		{"loopback, no key", nil, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, log := startRun(t, c.env, append([]string{"--upstream", up.URL}, c.args...)...)
			var exposed []string
			for _, w := range log.warnings() {
				if strings.Contains(w, "NO authentication") {
					exposed = append(exposed, w)
				}
			}
			if !c.warn && len(exposed) != 0 {
				t.Fatalf("unexpected warning %q", exposed)
			}
			if c.warn && (len(exposed) != 1 || !strings.Contains(exposed[0], apiKeyEnv) || !strings.Contains(exposed[0], "--api-key")) {
				t.Fatalf("warnings %q; want one saying the server is open and how to set a key\n%s", exposed, log)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": true, "::1": true, "localhost": true,
		"0.0.0.0": false, "::": false, "192.168.1.5": false, "example.com": false,
	} {
		if got := loopback(host); got != want {
			t.Errorf("loopback(%q) = %v, want %v", host, got, want)
		}
	}
}
