package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// fakeVLLM answers the parts of vLLM's OpenAI server the front uses: the
// runtime LoRA routes (recorded) and chat completions (the received model
// name echoed back).
type fakeVLLM struct {
	mu     sync.Mutex
	loads  []map[string]string
	chats  []string // model names received
	auths  []string // Authorization of each chat request
	seen   []string // "METHOD request-target Authorization" of every request
	loaded chan struct{}
}

func (v *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	v.seen = append(v.seen, r.Method+" "+r.RequestURI+" "+r.Header.Get("Authorization"))
	v.mu.Unlock()
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil && r.Method == http.MethodPost {
		http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "POST /v1/load_lora_adapter":
		m := map[string]string{}
		for k, val := range body {
			m[k], _ = val.(string)
		}
		v.mu.Lock()
		v.loads = append(v.loads, m)
		v.mu.Unlock()
		select {
		case v.loaded <- struct{}{}:
		default:
		}
		io.WriteString(w, "Success: LoRA adapter loaded")
	case "POST /v1/unload_lora_adapter":
		io.WriteString(w, "Success")
	case "POST /v1/chat/completions":
		model, _ := body["model"].(string)
		v.mu.Lock()
		v.chats = append(v.chats, model)
		v.auths = append(v.auths, r.Header.Get("Authorization"))
		v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, model)
	default:
		http.Error(w, "no route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}

// TestUpstreamFront runs the real hone-serve binary with --upstream in
// front of a fake vLLM, its keys given in the environment: an adapter step
// written after start is loaded into vLLM with its versioned name and
// absolute folder, a chat request for "<run>" reaches vLLM as
// "<run>@<step>" with vLLM's key, and requests without our key, or for
// vLLM's adapter routes however spelled, never reach vLLM.
func TestUpstreamFront(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	fake := &fakeVLLM{loaded: make(chan struct{}, 1)}
	up := httptest.NewServer(fake)
	defer up.Close()
	adapters := filepath.Join(dir, "adapters")
	if err := os.MkdirAll(adapters, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--upstream", up.URL, "--adapters", adapters,
		"--port", "0", "--poll-interval", "50ms", "--log-format", "json")
	cmd.Env = append(os.Environ(), apiKeyEnv+"=k", upstreamKeyEnv+"=s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var log strings.Builder
	addrc := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && strings.Contains(rec.Msg, "listening") && rec.Addr != "" {
				addrc <- rec.Addr
			}
		}
	}()
	logs := func() string { logMu.Lock(); defer logMu.Unlock(); return log.String() }
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(30 * time.Second):
		t.Fatalf("no listening line:\n%s", logs())
	}

	// An adapter step appears, as hone-train writes it.
	step := filepath.Join(adapters, "myrun", "step-000003")
	if err := os.MkdirAll(step, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(step, "adapter_config.json"), []byte(`{"r":8,"lora_alpha":16,"target_modules":["q_proj"],"peft_type":"LORA"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(step, "adapter_model.safetensors"), []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      "), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(adapters, "myrun", "latest"), []byte("step-000003\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fake.loaded:
	case <-time.After(20 * time.Second):
		t.Fatalf("vLLM got no load_lora_adapter call:\n%s", logs())
	}
	fake.mu.Lock()
	loads := fake.loads
	fake.mu.Unlock()
	if len(loads) != 1 || loads[0]["lora_name"] != "myrun@3" || loads[0]["lora_path"] != step {
		t.Fatalf("load calls %v, want lora_name myrun@3, lora_path %s", loads, step)
	}

	// "myrun" switches to the new step right after the load succeeds, so
	// a request may still pass as "myrun" for a moment; retry until vLLM
	// sees the versioned name, and accept nothing else.
	last := ""
	sent := func() bool {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"myrun","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Choices) != 1 || out.Choices[0].Message.Content != "hi" {
			t.Fatalf("chat for myrun: %d %s\n%s", resp.StatusCode, b, logs())
		}
		fake.mu.Lock()
		last = fake.chats[len(fake.chats)-1]
		fake.mu.Unlock()
		if last != "myrun" && last != "myrun@3" {
			t.Fatalf("vLLM received model %q, want myrun@3\n%s", last, logs())
		}
		return last == "myrun@3"
	}
	if !waitfor.Within(10*time.Second, sent) {
		t.Fatalf("vLLM still received model %q after 10 s, want myrun@3\n%s", last, logs())
	}

	fake.mu.Lock()
	auths := fake.auths
	fake.mu.Unlock()
	for _, a := range auths {
		if a != "Bearer s" {
			t.Fatalf("vLLM got Authorization %q on a chat request, want %s's key", a, upstreamKeyEnv)
		}
	}

	// Our key (from HONE_API_KEY) is checked before anything reaches vLLM,
	// and vLLM's adapter routes are not reachable at all, however spelled
	// (the review's repro: //v1/load_lora_adapter reached vLLM with its key).
	fake.mu.Lock()
	fake.seen = nil
	fake.mu.Unlock()
	for _, c := range []struct {
		path string
		want int
	}{
		{"/v1/chat/completions", http.StatusUnauthorized},
		{"//v1/chat/completions", http.StatusNotFound},
		{"//v1/load_lora_adapter", http.StatusNotFound},
		{"/v1/load_lora_adapter", http.StatusNotFound},
		{"/invocations", http.StatusNotFound},
		{"/sleep", http.StatusNotFound},
		{"/reset_prefix_cache", http.StatusNotFound},
	} {
		resp, err := http.Post("http://"+addr+c.path, "application/json", strings.NewReader(`{"model":"myrun","lora_name":"x","lora_path":"/etc"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST %s without a key: status %d, want %d", c.path, resp.StatusCode, c.want)
		}
	}
	fake.mu.Lock()
	seen := fake.seen
	fake.mu.Unlock()
	if len(seen) != 0 {
		t.Fatalf("requests without our key reached vLLM: %q", seen)
	}

	// SIGTERM drains and exits 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-logDone
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs())
	}
}
