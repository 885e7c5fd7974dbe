package serve

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels/ref"
)

// divergedB draws the B entries of a diverged adapter step: ±3e38, finite
// (so the loader's check for NaN and Inf passes, as it would for a step
// whose weights grew huge before turning NaN), and large enough that the
// first forward overflows: every logit of the tiny model is NaN.
func divergedB(rng *rand.Rand) float32 {
	if rng.IntN(2) == 0 {
		return -3e38
	}
	return 3e38
}

// wantAPIError checks that err is the OpenAI error hone-serve answers a
// sequence left with no token to choose: 500, type server_error, code, and
// a message holding every one of words.
func wantAPIError(t *testing.T, what string, err error, code string, words ...string) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("%s: error %v, want an API error", what, err)
	}
	if ae.StatusCode != 500 || ae.Type != "server_error" || ae.Code != code {
		t.Errorf("%s: status %d type %q code %q, want 500 server_error %s", what, ae.StatusCode, ae.Type, ae.Code, code)
	}
	for _, w := range words {
		if !strings.Contains(ae.Message, w) {
			t.Errorf("%s: message %q does not say %q", what, ae.Message, w)
		}
	}
}

// wantStreamError checks that a stream read with openai-go ends in the
// error event hone-serve sends mid-stream, with code and words in it.
func wantStreamError(t *testing.T, what string, err error, code string, words ...string) {
	t.Helper()
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("%s: stream error %v, want openai-go's StreamError", what, err)
	}
	var ev errorBody
	if err := json.Unmarshal(se.Event.Data, &ev); err != nil {
		t.Fatalf("%s: error event %s: %v", what, se.Event.Data, err)
	}
	if ev.Error.Type != "server_error" || ev.Error.Code != code {
		t.Errorf("%s: error event %s, want type server_error code %s", what, se.Event.Data, code)
	}
	if !strings.Contains(se.Error(), code) || !strings.Contains(se.Error(), "no token could be chosen") {
		t.Errorf("%s: error %q does not carry the event's", what, se.Error())
	}
	for _, w := range words {
		if !strings.Contains(ev.Error.Message, w) {
			t.Errorf("%s: error event %s does not say %q", what, se.Event.Data, w)
		}
	}
}

// metricValue is the value of a /metrics line that starts with series.
func metricValue(t *testing.T, ts *testServer, series string) string {
	t.Helper()
	_, body := ts.get(t, "/metrics")
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s:\n%s", series, body)
	return ""
}

// TestDivergedAdapter: a training step whose LoRA weights diverged
// (finite, so the adapter loader takes it, but huge) is hot-reloaded, and
// every logit of the model under it is NaN. Every request on it fails with
// a 500 that says so and what to do (code logits_not_finite), through the
// official client, for chat and completions, non-streamed and streamed
// (there, after the 200 and the first chunk, as an error event that
// openai-go's stream reader returns as its error), n > 1 included, and
// in OpenAI's error shape on the wire; the
// earlier step still serves; /metrics counts the failures. A step holding
// NaN is refused by the loader (serve/adapters' TestNonFiniteRefused),
// so the previous step keeps serving: this one names the diverged step.
func TestDivergedAdapter(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 1)
	var log waitfor.Buffer
	ts := startServer(t, Options{Model: dir, Adapters: adir, PollInterval: 10 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&log, nil))}, nil)
	ctx := context.Background()
	if _, err := ts.client.Chat.Completions.New(ctx, chatParams("r1", 1, 4)); err != nil {
		t.Fatalf("step 1: %v", err)
	}
	writeStepB(t, dir, adir, "r1", 2, divergedB)
	if !waitfor.Within(20*time.Second, func() bool {
		_, err := ts.client.Chat.Completions.New(ctx, chatParams("r1", 1, 4))
		return err != nil
	}) {
		t.Fatalf("the diverged step 2 was not served within 20 s; log:\n%s", log.String())
	}
	words := []string{`"r1@2"`, "NaN", "adapter has likely diverged", "serve an earlier step", "choice 0 after 0 generated tokens"}
	const series = `hone_serve_no_token_errors_total{code="logits_not_finite"}`
	var before int
	fmt.Sscan(metricValue(t, ts, series), &before) // the failures while waiting for step 2

	_, err := ts.client.Chat.Completions.New(ctx, chatParams("r1", 1, 4))
	wantAPIError(t, "chat", err, codeLogitsNotFinite, words...)
	p := chatParams("r1", 1, 4)
	p.N = openai.Int(3)
	_, err = ts.client.Chat.Completions.New(ctx, p)
	wantAPIError(t, "chat, n 3", err, codeLogitsNotFinite, `"r1@2"`, "NaN")
	_, err = ts.client.Completions.New(ctx, openai.CompletionNewParams{Model: "r1",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello")}, MaxTokens: openai.Int(4)})
	wantAPIError(t, "completions", err, codeLogitsNotFinite, words...)

	// The body as a client without the SDK reads it: OpenAI's error shape.
	status, body := ts.post(t, "/v1/chat/completions", `{"model":"r1","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)
	var eb struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil || status != 500 || eb.Error["type"] != "server_error" ||
		eb.Error["code"] != codeLogitsNotFinite || eb.Error["param"] != nil || !strings.Contains(fmt.Sprint(eb.Error["message"]), "NaN") {
		t.Errorf("raw answer %d %s", status, body)
	}

	// Streamed, as OpenAI and vLLM end a stream that fails after its 200:
	// an event holding the same error object, then [DONE].
	status, body = ts.post(t, "/v1/chat/completions", `{"model":"r1","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`)
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if n := len(events); status != 200 || n < 3 || events[n-1] != "data: [DONE]" || !strings.HasPrefix(events[n-2], `data: {"error":{"message":"no token could be chosen`) ||
		!strings.HasSuffix(events[n-2], `"type":"server_error","param":null,"code":"logits_not_finite"}}`) {
		t.Errorf("raw stream %d:\n%s", status, body)
	}

	cs := ts.client.Chat.Completions.NewStreaming(ctx, chatParams("r1", 1, 4))
	chunks := 0
	for cs.Next() {
		chunks++
	}
	wantStreamError(t, "chat stream", cs.Err(), codeLogitsNotFinite, words...)
	if chunks != 1 {
		t.Errorf("chat stream: %d chunks before the error, want the first (the role's)", chunks)
	}
	ps := ts.client.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: "r1",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello")}, MaxTokens: openai.Int(4)})
	for ps.Next() {
		t.Errorf("completion stream: a chunk %+v before the error", ps.Current())
	}
	wantStreamError(t, "completion stream", ps.Err(), codeLogitsNotFinite, words...)

	if _, err := ts.client.Chat.Completions.New(ctx, chatParams("r1@1", 1, 4)); err != nil {
		t.Errorf("step 1 after step 2 diverged: %v", err)
	}
	if v := metricValue(t, ts, series); v != fmt.Sprint(before+7) {
		t.Errorf("logits_not_finite counted %s times, want %d", v, before+7)
	}
	if v := metricValue(t, ts, `hone_serve_no_token_errors_total{code="constraint_no_token"}`); v != "0" {
		t.Errorf("constraint_no_token counted %s times, want 0", v)
	}
	if n := strings.Count(log.String(), "a sequence had no token to choose"); n != 1 || !strings.Contains(log.String(), "model=r1@2") {
		t.Errorf("the failure is logged %d times, want once with its model:\n%s", n, log.String())
	}
}

// overflowModelDir copies the tiny model folder with its final norm's
// weights at 3e38, finite but so large that the hidden state and the
// logits overflow float32: every logit is then NaN or ±Inf, as a
// checkpoint whose weights blew up (finite, which the loader cannot
// refuse) gives.
func overflowModelDir(t *testing.T) string {
	t.Helper()
	return patchedModelDir(t, "tiny-overflow", func(shape func(string) []int, set func(string, int, int, float32)) {
		for c := range shape("model.norm.weight")[0] {
			set("model.norm.weight", 0, c, 3e38)
		}
	})
}

// patchedModelDir copies the tiny model folder into a new folder named
// name and lets patch change single float32 weights of its safetensors
// file in place: shape gives a tensor's shape, set(tensor, row, col, v)
// writes v at [row, col] of a 2-D tensor (row 0 of a vector). A tensor
// that is missing or not float32 fails the test.
func patchedModelDir(t *testing.T, name string, patch func(shape func(string) []int, set func(string, int, int, float32))) string {
	t.Helper()
	src, dst := tinyDir(t), filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dst, "model.safetensors")
	f, err := safetensors.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info := func(tensor string) safetensors.TensorInfo {
		in, ok := f.Info(tensor)
		if !ok || in.DType != safetensors.F32 {
			t.Fatalf("%s: %+v, want a float32 tensor", tensor, in)
		}
		return in
	}
	data := 8 + int64(binary.LittleEndian.Uint64(b)) // the data area follows the header
	shape := func(tensor string) []int { return info(tensor).Shape }
	set := func(tensor string, row, col int, v float32) {
		in := info(tensor)
		at := data + in.Begin + 4*int64(row*in.Shape[len(in.Shape)-1]+col)
		binary.LittleEndian.PutUint32(b[at:], math.Float32bits(v))
	}
	patch(shape, set)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestOverflowingBaseWeights: a base model whose activations overflow
// float32 is served (checking a model's activations ahead would mean
// running it), and its requests fail with the same 500 as a diverged
// adapter's, in words that speak of the model, not of an adapter.
func TestOverflowingBaseWeights(t *testing.T) {
	ts := startServer(t, Options{Model: overflowModelDir(t), ServedModelName: "broken"}, nil)
	if status, _ := ts.get(t, "/health"); status != 200 {
		t.Fatalf("health %d", status)
	}
	_, err := ts.client.Chat.Completions.New(context.Background(), chatParams("broken", 1, 4))
	wantAPIError(t, "chat", err, codeLogitsNotFinite, `model "broken"`, "NaN", "overflow", "check the model's weights")
	if ae := (*openai.Error)(nil); errors.As(err, &ae) && strings.Contains(ae.Message, "adapter") {
		t.Errorf("the base model's error speaks of an adapter: %s", ae.Message)
	}
}

// TestNaNBaseWeightsRefused: a base model whose weights hold a NaN is
// refused at start (train/model's load check), the error naming the
// folder, the tensor and the element, rather than served to fail every
// request.
func TestNaNBaseWeightsRefused(t *testing.T) {
	dir := patchedModelDir(t, "tiny-nan", func(_ func(string) []int, set func(string, int, int, float32)) {
		set("model.norm.weight", 0, 3, float32(math.NaN()))
	})
	_, err := NewServer(Options{Model: dir, Backend: ref.New(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		t.Fatal("a model with a NaN weight was served")
	}
	for _, want := range []string{dir, `"model.norm.weight"`, "NaN", "element 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestConstraintNoToken: an output constraint that leaves no token (here
// the test hook's, allowing choice 1 three tokens and then none) fails the
// request with a 500 of code constraint_no_token naming the choice and
// the tokens before; the other choice, which would run for 2000 tokens,
// is dropped at once rather than generated for nothing. Streamed, the
// three tokens arrive before the error event.
func TestConstraintNoToken(t *testing.T) {
	const long = 2000
	ts := startServer(t, Options{Model: tinyDir(t)}, func(s *Server) {
		s.forceOutput = func(_ []int32, choice int) []int32 {
			if choice == 1 {
				return []int32{'a', 'b', 'c', -1}
			}
			ids := make([]int32, long)
			for i := range ids {
				ids[i] = 'x'
			}
			return ids
		}
	})
	ctx := context.Background()
	words := []string{"choice 1 after 3 generated tokens", "output constraint", `model "tiny"`}
	p := chatParams("tiny", 1, long)
	p.N = openai.Int(2)
	t0 := time.Now()
	_, err := ts.client.Chat.Completions.New(ctx, p)
	took := time.Since(t0)
	wantAPIError(t, "chat, n 2", err, codeConstraintNoToken, words...)
	eng := ts.s.Engine()
	if !waitfor.Within(20*time.Second, func() bool { return eng.Stats().Running == 0 }) {
		t.Fatalf("choice 0 still runs after the request failed")
	}
	// Choice 0 ran beside choice 1 for its 4 steps and ended with it, in
	// the engine's step (engine.ErrChoiceFailed), not when the handler's
	// cancel reached the engine: on a busy machine that was hundreds of
	// tokens later.
	if gen := eng.Stats().GenTokens; gen > 8 {
		t.Errorf("%d tokens generated after the failure of choice 1 (in %v), want the other choice dropped", gen, took)
	}

	p.N = openai.Int(2)
	cs := ts.client.Chat.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	for cs.Next() {
		for _, ch := range cs.Current().Choices {
			if ch.Index == 1 {
				text.WriteString(ch.Delta.Content)
			}
		}
	}
	wantStreamError(t, "chat stream", cs.Err(), codeConstraintNoToken, words...)
	if text.String() != "abc" {
		t.Errorf("choice 1 streamed %q before the error, want abc", text.String())
	}
	if v := metricValue(t, ts, `hone_serve_no_token_errors_total{code="constraint_no_token"}`); v != "2" {
		t.Errorf("constraint_no_token counted %s times, want 2", v)
	}
}
