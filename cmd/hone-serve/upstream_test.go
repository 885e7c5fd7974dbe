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
)

// fakeVLLM answers the parts of vLLM's OpenAI server the front uses: the
// runtime LoRA routes (recorded) and chat completions (the received model
// name echoed back).
type fakeVLLM struct {
	mu     sync.Mutex
	loads  []map[string]string
	chats  []string // model names received
	loaded chan struct{}
}

func (v *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, model)
	default:
		http.Error(w, "no route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}

// TestUpstreamFront runs the real hone-serve binary with --upstream in
// front of a fake vLLM: an adapter step written after start is loaded into
// vLLM with its versioned name and absolute folder, and a chat request for
// "<run>" reaches vLLM as "<run>@<step>".
func TestUpstreamFront(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "hone-serve")
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", binary, ".") // no symbols: links faster
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
		"--port", "0", "--poll-interval", "50ms", "--api-key", "k", "--log-format", "json")
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
	deadline := time.Now().Add(10 * time.Second)
	for {
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
		last := fake.chats[len(fake.chats)-1]
		fake.mu.Unlock()
		if last == "myrun@3" {
			break
		}
		if last != "myrun" || time.Now().After(deadline) {
			t.Fatalf("vLLM received model %q, want myrun@3\n%s", last, logs())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Our key is checked before anything reaches vLLM.
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"myrun"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: status %d, want 401", resp.StatusCode)
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
