package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// apiErrorOf parses an OpenAI error body.
func apiErrorOf(t *testing.T, body string) (msg, typ, param, code string) {
	t.Helper()
	var eb struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Message == "" {
		t.Fatalf("not an OpenAI error body: %.300s (%v)", body, err)
	}
	if eb.Error.Param != nil {
		param = *eb.Error.Param
	}
	if eb.Error.Code != nil {
		code = *eb.Error.Code
	}
	return eb.Error.Message, eb.Error.Type, param, code
}

// atLeastRE reads the prompt size out of the context-length message.
var atLeastRE = regexp.MustCompile(`^This model's maximum context length is 4096 tokens\. However, your request has at least (\d+) input tokens\. Please reduce the length of the (messages|prompt)\.$`)

// TestLongPromptRefusedBeforeTokenizing: a prompt far over the context in a
// body under the body limit is a 400 in vLLM's words, decided from its
// length without tokenizing it: the request allocates a few times the body
// (reading, decoding, rendering), where tokenizing it all costs 8 bytes per
// token and more (the old code: 38 to 60 times the body here).
func TestLongPromptRefusedBeforeTokenizing(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil) // 8 MiB body limit, 4096-token context
	text := strings.Repeat("a ", 2<<20)                   // 4 MiB: one token a byte with tiny's tokenizer
	for _, c := range []struct {
		path, body, param string
		maxAlloc          float64 // bytes allocated per body byte
	}{
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"` + text + `"}]}`, "messages", 12},
		{"/v1/completions", `{"model":"tiny","prompt":"` + text + `"}`, "prompt", 8},
	} {
		t.Run(c.param, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			status, body := ts.post(t, c.path, c.body)
			runtime.ReadMemStats(&after)
			if status != 400 {
				t.Fatalf("status %d, want 400: %.300s", status, body)
			}
			msg, typ, param, code := apiErrorOf(t, body)
			m := atLeastRE.FindStringSubmatch(msg)
			if m == nil || m[2] != c.param || typ != "invalid_request_error" || param != c.param || code != "context_length_exceeded" {
				t.Fatalf("error %q (type %q, param %q, code %q), want vLLM's context-length message with \"at least\"", msg, typ, param, code)
			}
			if n, _ := strconv.Atoi(m[1]); n < len(text)/13 {
				t.Errorf("at least %d tokens; %d bytes in tokens of at most 13 bytes are at least %d", n, len(text), len(text)/13)
			}
			per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(c.body))
			if per > c.maxAlloc {
				t.Fatalf("the request allocated %.1f bytes per body byte, want at most %v: the prompt was tokenized", per, c.maxAlloc)
			}
		})
	}
}

// TestLongPromptStopsAtContext: a prompt over the context but short enough
// that its length proves nothing is tokenized only until the count passes
// the context, so the 400 reports just over 4096 tokens, not its 20000.
func TestLongPromptStopsAtContext(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	text := strings.Repeat("a ", 10000) // 20000 tokens in 20000 bytes: under 4096 tokens of 13 bytes
	for _, c := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"` + text + `"}]}`, "messages"},
		{"/v1/completions", `{"model":"tiny","prompt":"` + text + `"}`, "prompt"},
	} {
		status, body := ts.post(t, c.path, c.body)
		if status != 400 {
			t.Fatalf("%s: status %d, want 400: %.300s", c.path, status, body)
		}
		msg, _, _, _ := apiErrorOf(t, body)
		m := atLeastRE.FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("%s: error %q, want vLLM's context-length message with \"at least\"", c.path, msg)
		}
		if n, _ := strconv.Atoi(m[1]); n <= 4096 || n > 4096+2 {
			t.Fatalf("%s: at least %d tokens; tokenizing should stop just past the 4096 of the context", c.path, n)
		}
	}
	// A prompt that fits is served.
	if status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"`+strings.Repeat("a ", 500)+`","max_tokens":2}`); status != 200 {
		t.Fatalf("a 1000-token prompt: %d %.300s", status, body)
	}
}

// TestTokenIDPromptOverContext: a completions prompt of token ids over the
// model's context, or filling it, is refused naming the prompt, the field
// the request has, not the messages of a chat request.
func TestTokenIDPromptOverContext(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil) // 4096-token context
	ids := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat("97,", n), ",") + "]"
	}
	for _, c := range []struct {
		name, prompt, want string
	}{
		{"over", ids(5000), "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the prompt."},
		{"whole", ids(4096), "the prompt has 4096 tokens, the whole of the model's context of 4096, which leaves none for the completion"},
		{"whole text", `"` + strings.Repeat("a", 4096) + `"`, "the prompt has 4096 tokens, the whole of the model's context of 4096, which leaves none for the completion"},
	} {
		status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":`+c.prompt+`}`)
		if status != 400 {
			t.Fatalf("%s: status %d, want 400: %.300s", c.name, status, body)
		}
		msg, _, param, _ := apiErrorOf(t, body)
		if msg != c.want || param != "prompt" {
			t.Errorf("%s: error %q (param %q), want %q (param \"prompt\")", c.name, msg, param, c.want)
		}
	}
}

// TestLinearRoPEContext: a model whose linear rope_scaling stretches
// max_position_embeddings 1024 by 4 takes 4096 tokens, as vLLM's
// max_model_len counts it and hone-train trains them
// (hfconfig.Config.MaxModelLen); the server held it to 1024.
func TestLinearRoPEContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny") // served as "tiny"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(tinyDir(t), name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "config.json" {
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			cfg["max_position_embeddings"] = 1024
			cfg["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 4}
			if b, err = json.Marshal(cfg); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts := startServer(t, Options{Model: dir}, nil)
	ids := "[" + strings.TrimSuffix(strings.Repeat("97,", 2000), ",") + "]"
	if status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":`+ids+`,"max_tokens":1}`); status != 200 {
		t.Fatalf("a 2000-token prompt within 4 × 1024: %d %.300s", status, body)
	}
	ids = "[" + strings.TrimSuffix(strings.Repeat("97,", 4096), ",") + "]"
	status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":`+ids+`}`)
	if msg, _, _, _ := apiErrorOf(t, body); status != 400 || !strings.Contains(msg, "the whole of the model's context of 4096") {
		t.Fatalf("a 4096-token prompt: %d %q", status, msg)
	}
}

// TestMaxTokensOverContext: a prompt that fits but leaves less room than
// max_tokens (or max_completion_tokens) asks for is the same 400 as a
// prompt over the context, code context_length_exceeded in vLLM's words,
// which clients (LiteLLM's ContextWindowExceededError, say) read to shorten
// the request; it was a 400 with no code and other words.
func TestMaxTokensOverContext(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), KVCacheBytes: 0}, nil) // 4096-token context
	want := regexp.MustCompile(`^This model's maximum context length is 4096 tokens\. However, you requested (\d+) tokens \((\d+) in the (messages|prompt), (\d+) in the completion\)\. Please reduce the length of the (messages|prompt) or completion\.$`)
	for _, c := range []struct{ path, body, param, field string }{
		{"/v1/completions", `{"model":"tiny","prompt":[97,98,99],"max_tokens":4094}`, "max_tokens", "prompt"},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":4095}`, "max_completion_tokens", "messages"},
	} {
		status, body := ts.post(t, c.path, c.body)
		if status != 400 {
			t.Fatalf("%s: status %d, want 400: %.300s", c.path, status, body)
		}
		msg, typ, param, code := apiErrorOf(t, body)
		m := want.FindStringSubmatch(msg)
		if m == nil || m[3] != c.field || m[5] != c.field || typ != "invalid_request_error" || param != c.param || code != "context_length_exceeded" {
			t.Fatalf("%s: error %q (type %q, param %q, code %q), want vLLM's context-length message for prompt + completion", c.path, msg, typ, param, code)
		}
		total, _ := strconv.Atoi(m[1])
		prompt, _ := strconv.Atoi(m[2])
		completion, _ := strconv.Atoi(m[4])
		if total != prompt+completion || total <= 4096 || c.path == "/v1/completions" && (prompt != 3 || completion != 4094) {
			t.Fatalf("%s: %q: counts do not add up", c.path, msg)
		}
	}
}
