package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/openaitest"
)

// talkEnv is a stdio environment that never ends an episode: each step
// answers with a user message of filler and reward 0.5, so that the
// conversation grows until the model's context is full. Its reset opens
// with a message of openBytes bytes.
const talkEnv = `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello":
        out = {"name": "talk", "reward_range": [0, 1]}
    elif op == "scenarios":
        out = {"scenarios": [{"id": "talk-%d" % i} for i in range(req["n"])]}
    elif op == "reset":
        out = {"messages": [{"role": "user", "content": "x" * int(sys.argv[1])}]}
    else:
        out = {"messages": [{"role": "user", "content": "go on " * 10}], "reward": 0.5, "metrics": {"steps": 1}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
`

// talkCommand writes talkEnv to a file and returns the command line that
// runs it, less its argument (the opening's size); without python3 the
// test skips.
func talkCommand(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	script := filepath.Join(t.TempDir(), "talk.py")
	if err := os.WriteFile(script, []byte(talkEnv), 0o644); err != nil {
		t.Fatal(err)
	}
	return py + " -S " + script
}

// startSmallServe runs the real hone-serve on the tiny test model with
// its context cut to ctxLen tokens (max_position_embeddings), and returns
// its base URL.
func startSmallServe(t *testing.T, ctxLen int) string {
	t.Helper()
	dir := openaitest.TinyQwenModel(t, "..")
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["max_position_embeddings"] = ctxLen
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	// SHA256SUMS names the config as it was: the copy is checked no more.
	os.Remove(filepath.Join(dir, "SHA256SUMS"))
	return serveModel(t, dir)
}

// An episode whose conversation outgrows the model's context ends there
// as a cut one, as --max-turns cuts it: the server's 400
// context_length_exceeded after the first turn is no failure of the
// episode, whose turns so far are kept with the environment's reward and
// truncated=1. Only a prompt that does not fit before any turn (the
// environment's opening alone too long) fails the episode.
func TestContextFullTruncates(t *testing.T) {
	talk := talkCommand(t)
	base := startSmallServe(t, 384)
	temp := 1.0
	opts := func(open int, out *bytes.Buffer) collect.Options {
		return collect.Options{
			Env: "stdio", EnvOpts: map[string]string{"cmd": talk + " " + strconv.Itoa(open)},
			Groups: 1, GroupSize: 2, Concurrency: 2, MaxTurns: 0, Seed: 5, Run: "r", Policy: "model", Out: out,
			Model: collect.ModelOptions{BaseURL: base + "/v1", Model: "tiny", Temperature: &temp, MaxTokens: 16, Backoff: time.Millisecond},
		}
	}
	t.Run("after turns", func(t *testing.T) {
		var out bytes.Buffer
		if _, err := runStats(context.Background(), opts(20, &out)); err != nil {
			t.Fatalf("run: %v", err)
		}
		for _, tr := range readGroups(t, out.Bytes())[0].Trajectories {
			if tr.Error != "" {
				t.Fatalf("%s: error %q, want the episode cut at the full context", tr.ID, tr.Error)
			}
			if tr.Reward == nil || *tr.Reward != 0.5 || tr.Metrics["truncated"] != 1 || tr.Metrics["steps"] != 1 || tr.Metrics["assistant_turns"] < 2 {
				t.Fatalf("%s: reward %v, metrics %v; want 0.5, truncated 1, the environment's metrics and 2 turns or more", tr.ID, tr.Reward, tr.Metrics)
			}
			last := tr.Messages[len(tr.Messages)-1]
			if last.Role != "user" {
				t.Fatalf("%s: last message %+v, want the environment's answer to the last turn", tr.ID, last)
			}
		}
	})
	t.Run("opening too long", func(t *testing.T) {
		var out bytes.Buffer
		_, err := runStats(context.Background(), opts(1000, &out))
		if err == nil {
			t.Fatal("run succeeded, want every episode failed")
		}
		for _, tr := range readGroups(t, out.Bytes())[0].Trajectories {
			if !strings.Contains(tr.Error, "turn 1") || !strings.Contains(tr.Error, "context_length_exceeded") {
				t.Fatalf("%s: error %q, want turn 1's context_length_exceeded", tr.ID, tr.Error)
			}
		}
		checkPromptAdvice(t, err, "prompt", "longer than the server's context of 384 tokens", "--max-model-len", "fewer tools")
	})
	// The prompt fits, but not with the completion --max-tokens asks
	// for: the advice names both, and --max-tokens first.
	t.Run("max tokens too many", func(t *testing.T) {
		var out bytes.Buffer
		o := opts(20, &out)
		o.Model.MaxTokens = 300 // below the context: a shorter prompt would fit with it
		_, err := runStats(context.Background(), o)
		if err == nil {
			t.Fatal("run succeeded, want every episode failed")
		}
		checkPromptAdvice(t, err, "--max-tokens 300", "server's context of 384 tokens", "lower --max-tokens")
	})
}

// checkPromptAdvice checks that a run whose episodes all failed at their
// first model call, refused for the model's context, says so and what to
// do (each of wants), instead of blaming the endpoint or the model name:
// that advice sent users looking at a server that was up and answering.
func checkPromptAdvice(t *testing.T, err error, wants ...string) {
	t.Helper()
	msg := err.Error()
	if !errors.Is(err, collect.ErrAllFailed) {
		t.Fatalf("error %q, want every episode failed", msg)
	}
	i := strings.Index(msg, "first model call")
	if i < 0 {
		t.Fatalf("error does not say the first model call was refused:\n%s", msg)
	}
	advice := msg[i:] // after the server's own words, which may name the sizes too
	for _, w := range wants {
		if !strings.Contains(advice, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, "is up and serves") {
		t.Errorf("error blames the endpoint for a prompt over the model's context:\n%s", msg)
	}
}

// vllmFront stands in front of a real server as vLLM does when its
// engine, not its OpenAI layer, refuses a prompt past max_model_len: the
// server's 400 for a full context is passed on in vLLM's words, a 400
// whose code is only its status and whose message names no "maximum
// context length".
type vllmFront struct{ upstream, body string }

func (f vllmFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp := passOn(w, r, f.upstream)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, f.body)
		return
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// vLLM's engine refuses a prompt longer than max_model_len in words of
// its own ("The decoder prompt (length N) is longer than the maximum
// model length of M"), which its OpenAI layer's check (the "maximum
// context length" words) lets through when it is not the one to refuse:
// such an episode failed instead of being cut.
func TestContextFullTruncatesVLLMEngineWords(t *testing.T) {
	talk := talkCommand(t)
	upstream := startSmallServe(t, 384)
	for server, body := range map[string]string{
		"vllm": `{"error":{"message":"The decoder prompt (length 390) is longer than the maximum model length of 384. Make sure that ` + "`max_model_len`" + ` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}`,
		// llama.cpp's llama-server (its exceed_context_size_error).
		"llama.cpp": `{"error":{"code":400,"message":"request (390 tokens) exceeds the available context size (384 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":390,"n_ctx":384}}`,
	} {
		srv := httptest.NewServer(vllmFront{upstream: upstream, body: body})
		defer srv.Close()
		var out bytes.Buffer
		temp := 1.0
		o := collect.Options{
			Env: "stdio", EnvOpts: map[string]string{"cmd": talk + " 20"},
			Groups: 1, GroupSize: 1, Concurrency: 1, MaxTurns: 0, Seed: 5, Run: "r", Policy: "model", Out: &out,
			Model: collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "tiny", Temperature: &temp, MaxTokens: 16, Backoff: time.Millisecond},
		}
		if _, err := runStats(context.Background(), o); err != nil {
			t.Fatalf("%s: run: %v", server, err)
		}
		tr := readGroups(t, out.Bytes())[0].Trajectories[0]
		if tr.Error != "" || tr.Metrics["truncated"] != 1 || tr.Metrics["assistant_turns"] < 2 {
			t.Errorf("%s: error %q, metrics %v; want the episode cut at the full context, truncated 1", server, tr.Error, tr.Metrics)
		}
		// An opening that does not fit: the advice names the sizes the
		// server's words give.
		out.Reset()
		o.EnvOpts = map[string]string{"cmd": talk + " 1000"}
		_, err := runStats(context.Background(), o)
		if err == nil {
			t.Fatalf("%s: run succeeded, want every episode failed", server)
		}
		checkPromptAdvice(t, err, "prompt", "longer than the server's context of 384 tokens", "390 tokens")
	}
}

// refuseAll answers every call with a 400 of body, as a server that
// refuses each request for its context does.
type refuseAll string

func (b refuseAll) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	io.WriteString(w, string(b))
}

// Regression: vLLM (since 0.8) refuses a max_tokens the context leaves no
// room for in words of its own ("'max_tokens' or 'max_completion_tokens'
// is too large: C. This model's maximum context length is N tokens and
// your request has P input tokens"), with no "in the completion": the
// advice said the prompt was longer than the context, though its P tokens
// fit, and sent users shortening a prompt instead of lowering
// --max-tokens. Odd wordings (sizes past int, "at least", none at all)
// give the plain advice, without a panic.
func TestPromptAdviceServerWordings(t *testing.T) {
	talk := talkCommand(t)
	msg := func(m string) string {
		raw, _ := json.Marshal(m)
		return `{"error":{"message":` + string(raw) + `,"type":"BadRequestError","param":null,"code":400}}`
	}
	for _, c := range []struct {
		name, body string
		wants      []string
	}{
		{"vllm max_tokens too large", msg("'max_tokens' or 'max_completion_tokens' is too large: 370. This model's maximum context length is 384 tokens and your request has 30 input tokens (370 > 384 - 30). None"),
			[]string{"prompt (30 tokens) fits", "--max-tokens 370", "server's context of 384 tokens", "lower --max-tokens"}},
		{"openai completion room", msg("This model's maximum context length is 384 tokens. However, you requested 400 tokens (30 in the messages, 370 in the completion). Please reduce the length of the messages or completion."),
			[]string{"prompt (30 tokens) fits", "--max-tokens 370", "lower --max-tokens"}},
		// OpenAI's words with tools: the prompt is the total, tool
		// schemas ("functions") included, not the messages' part.
		{"openai with functions", msg("This model's maximum context length is 384 tokens. However, your messages resulted in 400 tokens (350 in the messages, 50 in the functions). Please reduce the length of the messages or functions."),
			[]string{"tool schemas, 400 tokens) is longer than the server's context of 384 tokens"}},
		{"sizes past int", msg("This model's maximum context length is 99999999999999999999999 tokens. However, you requested 1 tokens (99999999999999999999999 in the messages, 99999999999999999999999 in the completion)."),
			[]string{"longer than the server's context of 99999999999999999999999 tokens"}},
		{"at least", msg("This model's maximum context length is 384 tokens. However, your request has at least 900 input tokens."),
			[]string{"at least 900 tokens", "context of 384 tokens"}},
		{"no sizes", msg("maximum context length exceeded"), []string{"is longer than the server's context:"}},
		{"completion without prompt", msg("This model's maximum context length is . 5 in the completion"), []string{"longer than the server's context"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(refuseAll(c.body))
			defer srv.Close()
			var out bytes.Buffer
			temp := 1.0
			o := collect.Options{
				Env: "stdio", EnvOpts: map[string]string{"cmd": talk + " 20"},
				Groups: 1, GroupSize: 1, Concurrency: 1, Seed: 5, Run: "r", Policy: "model", Out: &out,
				// Below the context: a --max-tokens that fills it alone
				// stops the run at once (TestMaxTokensOverCapStops).
				Model: collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "tiny", Temperature: &temp, MaxTokens: 370, Backoff: time.Millisecond},
			}
			_, err := runStats(context.Background(), o)
			if err == nil {
				t.Fatal("run succeeded, want every episode failed")
			}
			checkPromptAdvice(t, err, c.wants...)
		})
	}
}

// A --max-tokens that no prompt can be served with, in the servers'
// words: over OpenAI's completion cap of the model, or filling vLLM's
// context alone. The first such 400 before any call was answered stops
// the run with ErrMaxTokensOverCap, naming the flag and the cap, instead
// of failing every episode the same way (ErrAllFailed).
func TestMaxTokensOverCapStops(t *testing.T) {
	msg := func(m string) string {
		raw, _ := json.Marshal(m)
		return `{"error":{"message":` + string(raw) + `,"type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}}`
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"openai completion cap", msg("max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000."),
			"--max-tokens over the server's cap: --max-tokens 100000 is more than the server's cap of 16384"},
		{"vllm context", msg("'max_tokens' or 'max_completion_tokens' is too large: 100000. This model's maximum context length is 4096 tokens and your request has 30 input tokens (100000 > 4096 - 30). None"),
			"--max-tokens over the model's context: --max-tokens 100000 leaves no room for a prompt in the model's context of 4096 tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(refuseAll(c.body))
			defer srv.Close()
			temp := 1.0
			o := collect.Options{
				Env: "guess", Groups: 50, GroupSize: 2, Concurrency: 1, Seed: 5, Run: "r", Policy: "model", Out: &bytes.Buffer{},
				Model: collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "m", Temperature: &temp, MaxTokens: 100000, Backoff: time.Millisecond},
			}
			st, err := runStats(context.Background(), o)
			if !errors.Is(err, collect.ErrMaxTokensOverCap) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want ErrMaxTokensOverCap saying %q", err, c.want)
			}
			if st.Groups != 0 {
				t.Errorf("%d groups finished, want the run stopped at the first call", st.Groups)
			}
		})
	}
}
