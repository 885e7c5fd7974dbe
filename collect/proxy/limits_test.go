package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/collect/proxy"
)

// filler reads as prefix, n bytes of 'a', then suffix, without holding
// more than one block of them: a body far larger than anything the test
// allocates, so that the allocations measured are the proxy's.
type filler struct {
	prefix, suffix string
	n              int64
	block          []byte
}

func newFiller(prefix string, n int64, suffix string) *filler {
	return &filler{prefix: prefix, n: n, suffix: suffix, block: bytes.Repeat([]byte("a"), 32<<10)}
}

func (f *filler) Len() int64 { return int64(len(f.prefix)) + f.n + int64(len(f.suffix)) }

func (f *filler) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) {
		switch {
		case f.prefix != "":
			c := copy(p[k:], f.prefix)
			f.prefix, k = f.prefix[c:], k+c
		case f.n > 0:
			c := copy(p[k:], f.block[:min(int64(len(f.block)), f.n)])
			f.n, k = f.n-int64(c), k+c
		case f.suffix != "":
			c := copy(p[k:], f.suffix)
			f.suffix, k = f.suffix[c:], k+c
		default:
			if k == 0 {
				return 0, io.EOF
			}
			return k, nil
		}
	}
	return k, nil
}

// allocated returns the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

type apiErr struct {
	Error struct {
		Message, Type string
		Code          *string
	}
}

// TestProxyBodyLimit: on every route, a request body over the limit —
// declared in Content-Length or streamed without one — is answered 413 in
// OpenAI's error shape (hone-serve's), the upstream never sees the
// request, and a 100 MB body costs the proxy a small multiple of the limit,
// not of the body. The default limit is hone-serve's.
func TestProxyBodyLimit(t *testing.T) {
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	start := func(limit int64) *httptest.Server {
		p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: t.TempDir(), MaxBodyBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		return srv
	}
	post := func(t *testing.T, srv *httptest.Server, path, tid string, body *filler, declared bool) (*http.Response, apiErr) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, body)
		if declared {
			req.ContentLength = body.Len()
		} else {
			req.ContentLength = -1 // sent chunked: the proxy learns the size only by reading
		}
		req.Header.Set("Content-Type", "application/json")
		if tid != "" {
			req.Header.Set("X-Hone-Trajectory", tid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e apiErr
		if resp.StatusCode != http.StatusOK {
			json.NewDecoder(resp.Body).Decode(&e)
		}
		io.Copy(io.Discard, resp.Body)
		return resp, e
	}
	want413 := func(t *testing.T, resp *http.Response, e apiErr, limit int64) {
		t.Helper()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Type != "invalid_request_error" || e.Error.Code == nil || *e.Error.Code != "request_too_large" ||
			!strings.Contains(e.Error.Message, fmt.Sprintf("larger than %d bytes", limit)) || !strings.Contains(e.Error.Message, "--max-body-bytes") {
			t.Errorf("%s, %+v; want 413 request_too_large naming the limit and the flag", resp.Status, e)
		}
	}
	chat, end := `{"model":"m","messages":[{"role":"user","content":"`, `"}]}`

	// The default is hone-serve's --max-body-bytes (serve/options.go): a
	// body of exactly 8 MiB goes upstream, one byte more does not.
	var o proxy.Options
	fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
	o.AddFlags(fs)
	if f := fs.Lookup("max-body-bytes"); f == nil || f.DefValue != fmt.Sprint(8<<20) || proxy.DefaultMaxBodyBytes != 8<<20 {
		t.Fatalf("--max-body-bytes: %+v, DefaultMaxBodyBytes %d; want hone-serve's 8 MiB", f, proxy.DefaultMaxBodyBytes)
	}
	srv := start(0)
	n := proxy.DefaultMaxBodyBytes - int64(len(chat)+len(end))
	if resp, _ := post(t, srv, "/v1/chat/completions", "", newFiller(chat, n, end), false); resp.StatusCode != http.StatusOK || calls.Load() != 1 {
		t.Errorf("a body of the limit: %s, upstream got %d requests", resp.Status, calls.Load())
	}
	resp, e := post(t, srv, "/v1/chat/completions", "", newFiller(chat, n+1, end), true)
	want413(t, resp, e, proxy.DefaultMaxBodyBytes)
	if calls.Load() != 1 {
		t.Errorf("upstream got the body over the limit")
	}

	// A small limit makes the proxy's cost plain against a 100 MB body.
	const limit, huge = 1 << 20, 100 << 20
	srv = start(limit)
	streamed := `{"model":"m","stream":true,"messages":[{"role":"user","content":"`
	for _, c := range []struct {
		name, path, tid, prefix, suffix string
		declared                        bool
	}{
		{"recorded chat", "/v1/chat/completions", "t1", chat, end, false},
		{"recorded chat, declared length", "/v1/chat/completions", "t1", chat, end, true},
		{"recorded streamed chat", "/v1/chat/completions", "t2", streamed, end, false},
		{"unrecorded chat", "/v1/chat/completions", "", chat, end, false},
		{"other route", "/v1/completions", "", `{"model":"m","prompt":"`, `"}`, false},
		{"reward", "/hone/trajectories/t1/reward", "", `{"reward":1,"error":"`, `"}`, false},
		{"reward, declared length", "/hone/trajectories/t1/reward", "", `{"reward":1,"error":"`, `"}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := calls.Load()
			var resp *http.Response
			var e apiErr
			alloc := allocated(func() { resp, e = post(t, srv, c.path, c.tid, newFiller(c.prefix, huge, c.suffix), c.declared) })
			want413(t, resp, e, limit)
			if n := calls.Load() - before; n != 0 {
				t.Errorf("upstream got %d requests", n)
			}
			// Reading up to the limit costs a few times it; holding the
			// 100 MB body would cost more than twice the body.
			if alloc > 10*limit {
				t.Errorf("the proxy allocated %d MB for a %d MB body (limit %d MB)", alloc>>20, huge>>20, limit>>20)
			}
		})
	}
}

// TestProxyResponseLimit: an upstream answer larger than MaxResponseBytes
// — one JSON body, a stream of many events, or a stream whose one event is
// a single line of 100 MB — reaches the agent byte for byte while the
// proxy's allocations stay a small multiple of the limit, and the turn is
// recorded with an error saying why (a streamed one as far as the limit).
// An answer within the limit is recorded as usual.
func TestProxyResponseLimit(t *testing.T) {
	const huge, limit = 100 << 20, 1 << 20
	content := strings.Repeat("a", 64<<10)
	bigEvent := []byte("data: " + chunk(content, 5, "") + "\n\n")
	var sent [sha256.Size]byte // what upstream wrote for the last request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		out := io.MultiWriter(w, h)
		defer func() { copy(sent[:], h.Sum(nil)) }()
		mode := r.URL.Query().Get("mode")
		if mode == "plain" {
			w.Header().Set("Content-Type", "application/json")
			io.Copy(out, newFiller(`{"model":"agent@7","choices":[{"index":0,"message":{"role":"assistant","content":"`, huge, `"},"finish_reason":"stop"}]}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch mode {
		case "events":
			for range huge / len(bigEvent) {
				out.Write(bigEvent)
			}
		case "line":
			io.Copy(out, newFiller("data: ", huge, "\n\n"))
		}
		io.WriteString(out, "data: "+chunk("Hel", 5, "")+"\n\n"+"data: "+chunk("lo", 6, "stop")+"\n\n"+"data: [DONE]\n\n")
	}))
	defer up.Close()
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px", MaxResponseBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()

	modes := []string{"plain", "events", "line", "small"}
	for _, mode := range modes {
		stream := mode != "plain"
		var status string
		var got [sha256.Size]byte
		alloc := allocated(func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions?mode="+mode,
				// Asking for what the proxy adds, the agent gets upstream's
				// bytes as they are (else those within the limit would
				// come without them).
				strings.NewReader(fmt.Sprintf(`{"model":"agent","stream":%v,"logprobs":true,"return_token_ids":true,"messages":[{"role":"user","content":"hi"}]}`, stream)))
			req.Header.Set("X-Hone-Trajectory", mode)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			h := sha256.New()
			if _, err := io.Copy(h, resp.Body); err != nil {
				t.Fatalf("%s: reading the answer: %v", mode, err)
			}
			resp.Body.Close()
			status = resp.Status
			copy(got[:], h.Sum(nil))
		})
		if got != sent {
			t.Errorf("%s: %s, the agent did not read what upstream sent", mode, status)
		}
		if alloc > 16*limit {
			t.Errorf("%s: the proxy allocated %d MB relaying a %d MB answer (limit %d MB)", mode, alloc>>20, huge>>20, limit>>20)
		}
	}
	trs := readGroups(t, srv.URL, out, modes...)
	for _, mode := range modes[:3] {
		tr := trs[mode]
		if !strings.HasPrefix(tr.Error, "turn 1: upstream's") || !strings.Contains(tr.Error, fmt.Sprintf("larger than %d bytes (hone-collect proxy --max-response-bytes)", limit)) {
			t.Errorf("%s: error %q", mode, tr.Error)
		}
		if len(tr.Messages) != 2 || tr.Messages[1].Role != "assistant" || len(tr.Messages[1].Content) > limit || strings.Trim(tr.Messages[1].Content, "a") != "" {
			t.Errorf("%s: %d messages, the last %.40q…", mode, len(tr.Messages), tr.Messages[len(tr.Messages)-1].Content)
		}
	}
	if tr := trs["small"]; tr.Error != "not closed" || tr.Messages[1].Content != "Hello" || tr.Messages[1].FinishReason != "stop" {
		t.Errorf("small: error %q, messages %+v", tr.Error, tr.Messages)
	}
}
