package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// tinyDir is the committed tiny model folder (see testdata/README.md).
func tinyDir(t testing.TB) string {
	t.Helper()
	return filepath.Join("testdata", "tiny")
}

type testServer struct {
	s      *Server
	url    string // http://127.0.0.1:port
	client openai.Client
	stop   context.CancelFunc
	done   chan error
}

// startServer runs a real server on 127.0.0.1:0 on the reference backend.
// edit, when set, adjusts the Server before it serves (test hooks).
func startServer(t testing.TB, o Options, edit func(*Server)) *testServer {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		if testing.Verbose() {
			o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
	}
	if o.Backend == nil {
		o.Backend = ref.New()
	}
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{s: s, url: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ctx, ln) }()
	key := o.APIKey
	if key == "" {
		key = "none"
	}
	ts.client = openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	t.Cleanup(func() { ts.close(t) })
	return ts
}

func (ts *testServer) close(t testing.TB) {
	if ts.stop == nil {
		return
	}
	ts.stop()
	ts.stop = nil
	select {
	case err := <-ts.done:
		if err != nil {
			t.Errorf("server stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("server did not stop")
	}
}

// post sends a raw JSON body and returns status and body.
func (ts *testServer) post(t testing.TB, path, body string, header ...string) (int, string) {
	t.Helper()
	status, _, b := ts.postHeader(t, path, body, header...)
	return status, b
}

// postHeader is post that returns the response header too.
func (ts *testServer) postHeader(t testing.TB, path, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("POST", ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// postHonoured posts body to path and decodes the answer into v. A
// status other than 200, or an X-Hone-Warning header (a field answered as
// if it had not been sent), fails the test: a test of a vLLM field wants
// the field honoured, not warned about.
func (ts *testServer) postHonoured(t testing.TB, path, body string, v any) {
	t.Helper()
	status, h, out := ts.postHeader(t, path, body)
	if status != http.StatusOK || h.Get(WarningHeader) != "" {
		t.Fatalf("%s: %d, %s %q: %s", clip(body, 200), status, WarningHeader, h.Get(WarningHeader), out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s: %v: %s", clip(body, 200), err, out)
	}
}

// sampledChoice is what the tests of sampling fields read of a
// completion's choice.
type sampledChoice struct {
	Text         string  `json:"text"`
	FinishReason string  `json:"finish_reason"`
	TokenIDs     []int32 `json:"token_ids"`
}

// oneChoice posts a completion body that asks for one choice (with
// return_token_ids, for TokenIDs) as postHonoured does, and returns it.
func (ts *testServer) oneChoice(t testing.TB, body string) sampledChoice {
	t.Helper()
	var resp struct{ Choices []sampledChoice }
	ts.postHonoured(t, "/v1/completions", body, &resp)
	if len(resp.Choices) != 1 {
		t.Fatalf("%s: %d choices, want 1", clip(body, 200), len(resp.Choices))
	}
	return resp.Choices[0]
}

func (ts *testServer) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(ts.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// writeStep writes adapter step n of run into dir/<run>/step-0000n with
// random A and B (so it changes the output), then points latest at it, both
// atomically (temporary name, then rename), as hone-train does.
func writeStep(t testing.TB, modelDir, adaptersDir, run string, n int) {
	t.Helper()
	writeStepB(t, modelDir, adaptersDir, run, n, func(rng *rand.Rand) float32 { return float32(rng.NormFloat64()) })
}

// writeStepB is writeStep with every entry of B drawn by b.
func writeStepB(t testing.TB, modelDir, adaptersDir, run string, n int, b func(rng *rand.Rand) float32) {
	t.Helper()
	m, err := model.Load(modelDir, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 4, Alpha: 8, Targets: model.AllModules()}, uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr == nil {
				continue
			}
			for i := range lr.B {
				lr.B[i] = b(rng)
			}
		}
	}
	runDir := filepath.Join(adaptersDir, run)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := stepName(n)
	tmp := filepath.Join(runDir, ".tmp-"+name)
	if err := model.WriteAdapter(tmp, ad, modelDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(runDir, name)); err != nil {
		t.Fatal(err)
	}
	pointLatest(t, runDir, name)
}

func stepName(n int) string { return fmt.Sprintf("step-%06d", n) }

func pointLatest(t testing.TB, runDir, name string) {
	t.Helper()
	tmp := filepath.Join(runDir, ".latest.tmp")
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(runDir, "latest")); err != nil {
		t.Fatal(err)
	}
}

// chatTokens posts a chat completion body (which asks for logprobs and
// return_token_ids) and returns choice 0's token ids and logprobs; a status
// other than 200 fails the test.
func chatTokens(t *testing.T, ts *testServer, body string) (ids []int32, lps []float64) {
	t.Helper()
	status, out := ts.post(t, "/v1/chat/completions", body)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", body, status, out)
	}
	var resp struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
			Logprobs struct {
				Content []struct {
					Logprob float64 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		}
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Choices[0].Logprobs.Content {
		lps = append(lps, c.Logprob)
	}
	return resp.Choices[0].TokenIDs, lps
}
