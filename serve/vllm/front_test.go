package vllm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// call is one request the fake vLLM received on its LoRA API.
type call struct {
	Method, Path string
	Body         map[string]any
}

// fakeVLLM speaks the parts of vLLM's server the front uses: the runtime
// LoRA routes (answering like vLLM, including 400 for a name loaded twice),
// /v1/models, and a chat route that streams or echoes what it received.
type fakeVLLM struct {
	t      *testing.T
	mu     sync.Mutex
	calls  []call
	loaded []string
	failOn map[string]int // lora_name → status to answer its load with
	chats  []map[string]any
	auth   []string
	// release, when set, holds the second stream chunk until closed.
	release chan struct{}
}

func (v *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m map[string]any
	json.Unmarshal(body, &m)
	v.mu.Lock()
	v.auth = append(v.auth, r.Header.Get("Authorization"))
	switch r.URL.Path {
	case "/v1/load_lora_adapter", "/v1/unload_lora_adapter":
		v.calls = append(v.calls, call{r.Method, r.URL.Path, m})
		name, _ := m["lora_name"].(string)
		if r.URL.Path == "/v1/load_lora_adapter" {
			if st := v.failOn[name]; st != 0 {
				v.mu.Unlock()
				http.Error(w, `{"error":{"message":"cannot load","type":"BadRequestError","code":`+fmt.Sprint(st)+`}}`, st)
				return
			}
			if slices.Contains(v.loaded, name) {
				v.mu.Unlock()
				http.Error(w, `{"error":{"message":"The lora adapter '`+name+`' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.","type":"InvalidUserInput","param":null,"code":400}}`, 400)
				return
			}
			v.loaded = append(v.loaded, name)
			v.mu.Unlock()
			fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", name)
			return
		}
		if !slices.Contains(v.loaded, name) {
			v.mu.Unlock()
			http.Error(w, `{"error":{"message":"not found","code":404}}`, 404)
			return
		}
		v.loaded = slices.DeleteFunc(v.loaded, func(s string) bool { return s == name })
		v.mu.Unlock()
		fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", name)
		return
	case "/v1/models":
		data := []map[string]any{{"id": "base", "object": "model", "owned_by": "vllm", "root": "/models/base", "parent": nil}}
		for _, n := range v.loaded {
			data = append(data, map[string]any{"id": n, "object": "model", "owned_by": "vllm", "root": "/a/" + n, "parent": "base"})
		}
		v.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
		return
	case "/v1/chat/completions":
		v.chats = append(v.chats, m)
		release := v.release
		v.mu.Unlock()
		if m["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"delta\":{\"content\":\"he\"}}]}\n\n", m["model"])
			w.(http.Flusher).Flush()
			if release != nil {
				<-release
			}
			fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"delta\":{\"content\":\"llo\"}}]}\n\ndata: [DONE]\n\n", m["model"])
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"chat.completion","model":%q,"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, m["model"])
		return
	}
	v.mu.Unlock()
	http.NotFound(w, r)
}

func (v *fakeVLLM) takeCalls() []call {
	v.mu.Lock()
	defer v.mu.Unlock()
	c := v.calls
	v.calls = nil
	return c
}

// writeStep writes a PEFT adapter folder DIR/run/step-N and points latest at it.
func writeStep(t *testing.T, dir, run string, step int) string {
	t.Helper()
	name := fmt.Sprintf("step-%06d", step)
	p := filepath.Join(dir, run, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "adapter_config.json"), []byte(`{"r":8,"lora_alpha":16,"target_modules":["q_proj"],"peft_type":"LORA"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "adapter_model.safetensors"), []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      "), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, run, "latest"), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newFixture(t *testing.T, o Options) (*fakeVLLM, *Front, string) {
	t.Helper()
	fake := &fakeVLLM{t: t, failOn: map[string]int{}}
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	if o.AdaptersDir == "" {
		o.AdaptersDir = t.TempDir()
	}
	o.Upstream = up.URL + "/v1"
	f, err := NewFront(o)
	if err != nil {
		t.Fatal(err)
	}
	return fake, f, o.AdaptersDir
}

func wantCalls(t *testing.T, got []call, want ...call) {
	t.Helper()
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("vLLM calls:\n got %s\nwant %s", gb, wb)
	}
}

func load(name, path string) call {
	return call{"POST", "/v1/load_lora_adapter", map[string]any{"lora_name": name, "lora_path": path}}
}
func unload(name string) call {
	return call{"POST", "/v1/unload_lora_adapter", map[string]any{"lora_name": name}}
}

// TestSyncLoadsNewStepsAndUnloadsOld: each new step is loaded under a
// versioned name with its absolute path, "<run>" switches to it, and the
// versions beyond the keep count are unloaded after the load, oldest first.
func TestSyncLoadsNewStepsAndUnloadsOld(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 2})
	ctx := context.Background()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls()) // nothing to load yet
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	if got, ok := f.Model("r"); !ok || got != "r@1" {
		t.Fatalf(`Model("r") = %q, %v; want r@1`, got, ok)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls()) // unchanged folder: no calls
	writeStep(t, dir, "r", 2)
	p3 := writeStep(t, dir, "r", 3) // two steps between polls: only the newest is loaded
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@3", p3))
	p4 := writeStep(t, dir, "r", 4)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@4", p4), unload("r@1"))
	if got := f.Loaded(); !slices.Equal(got, []string{"r@3", "r@4"}) {
		t.Fatalf("Loaded = %v", got)
	}
	if got, ok := f.Model("r@3"); !ok || got != "r@3" {
		t.Fatalf(`Model("r@3") = %q, %v`, got, ok)
	}
	if _, ok := f.Model("r@1"); ok {
		t.Fatal("r@1 still resolves after its unload")
	}
	if got, ok := f.Model("base"); !ok || got != "base" {
		t.Fatalf(`Model("base") = %q, %v; want it unchanged`, got, ok)
	}
	// A second run is independent; invalid run names are skipped.
	q := writeStep(t, dir, "q", 7)
	os.MkdirAll(filepath.Join(dir, ".hidden", "step-1"), 0o755)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("q@7", q))
	if !filepath.IsAbs(p1) {
		t.Fatalf("test paths should be absolute: %s", p1)
	}
}

// TestLoadFailureKeepsPrevious: a refused load leaves "<run>" on the
// previous version, is not retried while the folder is unchanged, and is
// retried once it changes.
func TestLoadFailureKeepsPrevious(t *testing.T) {
	fake, f, dir := newFixture(t, Options{KeepAdapters: 1})
	ctx := context.Background()
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	fake.failOn["r@2"] = 500
	p2 := writeStep(t, dir, "r", 2)
	err := f.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "still serving r@1") || !strings.Contains(err.Error(), "500") {
		t.Fatalf("Sync error = %v; want the refusal, naming r@1 as still serving", err)
	}
	wantCalls(t, fake.takeCalls(), load("r@2", p2)) // no unload of r@1
	if got, _ := f.Model("r"); got != "r@1" {
		t.Fatalf(`Model("r") = %q after a failed load; want r@1`, got)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("second Sync of an unchanged failed folder: %v", err)
	}
	wantCalls(t, fake.takeCalls())
	// The trainer rewrites the folder; the load is tried again and works.
	delete(fake.failOn, "r@2")
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(filepath.Join(p2, "adapter_model.safetensors"), later, later)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@2", p2), unload("r@1"))
	if got, _ := f.Model("r"); got != "r@2" {
		t.Fatalf(`Model("r") = %q; want r@2`, got)
	}
	// A half-written folder (no weights yet) is refused before vLLM sees it.
	p3 := filepath.Join(dir, "r", "step-000003")
	os.MkdirAll(p3, 0o755)
	os.WriteFile(filepath.Join(p3, "adapter_config.json"), []byte(`{"r":8}`), 0o644)
	os.WriteFile(filepath.Join(dir, "r", "latest"), []byte("step-000003"), 0o644)
	if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "adapter_model.safetensors") {
		t.Fatalf("Sync of a folder without weights: %v", err)
	}
	wantCalls(t, fake.takeCalls())
	// A missing runtime-LoRA route (vLLM without the env flag) says so.
	fake.failOn["r@4"] = 404
	writeStep(t, dir, "r", 4)
	if err := f.Sync(ctx); err == nil || !strings.Contains(err.Error(), "VLLM_ALLOW_RUNTIME_LORA_UPDATING") {
		t.Fatalf("Sync against a vLLM without runtime LoRA: %v", err)
	}
}

// TestRestartAdoptsLoaded: a new front whose vLLM already holds the step
// takes vLLM's "already been loaded" answer as success.
func TestRestartAdoptsLoaded(t *testing.T) {
	fake, f, dir := newFixture(t, Options{})
	p := writeStep(t, dir, "r", 5)
	fake.loaded = []string{"r@5"}
	if err := f.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@5", p))
	if got, _ := f.Model("r"); got != "r@5" {
		t.Fatalf(`Model("r") = %q`, got)
	}
}

// TestProxy: the model name is rewritten, other fields arrive unchanged, a
// stream reaches the client chunk by chunk, and the front's own checks
// answer before vLLM is asked.
func TestProxy(t *testing.T) {
	fake, f, dir := newFixture(t, Options{APIKey: "secret", UpstreamKey: "vkey", MaxBodyBytes: 4096})
	p2 := writeStep(t, dir, "r", 2)
	if err := f.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@2", p2))
	front := httptest.NewServer(f)
	defer front.Close()
	post := func(path, key, body string) *http.Response {
		req, _ := http.NewRequest("POST", front.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	readAll := func(resp *http.Response) string {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}

	resp := post("/v1/chat/completions", "secret", `{"model":"r","messages":[{"role":"user","content":"x"}],"temperature":0.5,"logprobs":true}`)
	body := readAll(resp)
	if resp.StatusCode != 200 || !strings.Contains(body, `"model":"r@2"`) {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	fake.mu.Lock()
	got := fake.chats[len(fake.chats)-1]
	fake.mu.Unlock()
	want := map[string]any{"model": "r@2", "messages": []any{map[string]any{"role": "user", "content": "x"}}, "temperature": 0.5, "logprobs": true}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("vLLM received %s; want %s", gb, wb)
	}
	if a := fake.auth[len(fake.auth)-1]; a != "Bearer vkey" {
		t.Fatalf("vLLM got Authorization %q; want the upstream key, not the client's", a)
	}

	// Streaming: the first chunk arrives while vLLM still holds the second.
	fake.mu.Lock()
	fake.release = make(chan struct{})
	fake.mu.Unlock()
	resp = post("/v1/chat/completions", "secret", `{"model":"r","stream":true,"messages":[]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "data: {\"model\":\"r@2\",\"choices\":[{\"delta\":{\"content\":\"he\"}}]}\n" {
		t.Fatalf("first chunk %q, %v", first, err)
	}
	close(fake.release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if want := "\ndata: {\"model\":\"r@2\",\"choices\":[{\"delta\":{\"content\":\"llo\"}}]}\n\ndata: [DONE]\n\n"; string(rest) != want {
		t.Fatalf("rest of stream %q; want %q", rest, want)
	}
	fake.mu.Lock()
	fake.release = nil
	nChats := len(fake.chats)
	fake.mu.Unlock()

	// The front's own answers; none of these reach vLLM's chat route.
	for _, c := range []struct {
		name, path, key, body string
		status                int
		in                    string
	}{
		{"no key", "/v1/chat/completions", "", `{"model":"r"}`, 401, "invalid_api_key"},
		{"wrong key", "/v1/chat/completions", "nope", `{"model":"r"}`, 401, "invalid_api_key"},
		{"too big", "/v1/chat/completions", "secret", `{"model":"r","x":"` + strings.Repeat("a", 5000) + `"}`, 413, "request_too_large"},
		{"unloaded version", "/v1/chat/completions", "secret", `{"model":"r@1"}`, 404, "model_not_found"},
		{"load route", "/v1/load_lora_adapter", "secret", `{"lora_name":"x","lora_path":"/etc"}`, 404, "no route"},
	} {
		resp := post(c.path, c.key, c.body)
		body := readAll(resp)
		var e struct {
			Error struct{ Message, Type string }
		}
		if resp.StatusCode != c.status || !strings.Contains(body, c.in) || json.Unmarshal([]byte(body), &e) != nil || e.Error.Type == "" {
			t.Errorf("%s: %d %s; want %d with %q in an error object", c.name, resp.StatusCode, body, c.status, c.in)
		}
	}
	fake.mu.Lock()
	reached := fake.chats[nChats:]
	fake.mu.Unlock()
	if calls := fake.takeCalls(); len(reached) != 0 || len(calls) != 0 {
		t.Fatalf("refused requests reached vLLM: chats %v, LoRA calls %v", reached, calls)
	}

	// /v1/models gains the "<run>" alias of the current version.
	req, _ := http.NewRequest("GET", front.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer secret")
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID, Parent, Root string }
	}
	if err := json.NewDecoder(mresp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	mresp.Body.Close()
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID+"<"+m.Parent)
	}
	if !slices.Equal(ids, []string{"base<", "r@2<base", "r<base"}) {
		t.Fatalf("models %v", ids)
	}

	// vLLM gone: 502 in OpenAI's error shape.
	dead, _ := NewFront(Options{Upstream: "http://127.0.0.1:1"})
	rec := httptest.NewRecorder()
	dead.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`)))
	if rec.Code != 502 || !strings.Contains(rec.Body.String(), "upstream_error") {
		t.Fatalf("dead upstream: %d %s", rec.Code, rec.Body.String())
	}
}

func TestNewFrontChecksUpstream(t *testing.T) {
	for _, u := range []string{"", "localhost:8000", "ftp://x", "http://"} {
		if _, err := NewFront(Options{Upstream: u}); err == nil {
			t.Errorf("NewFront(%q) succeeded", u)
		}
	}
}

// TestWatch: the poll loop loads a step that appears while it runs.
func TestWatch(t *testing.T) {
	fake, f, dir := newFixture(t, Options{Interval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Watch(ctx); close(done) }()
	p := writeStep(t, dir, "r", 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, _ := f.Model("r"); got == "r@1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Watch did not load r@1 within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	wantCalls(t, fake.takeCalls(), load("r@1", p))
}

// TestServeDrains: on cancel, a stream in flight finishes, a new request
// on a kept-alive connection gets 503, and Serve returns nil.
func TestServeDrains(t *testing.T) {
	fake, f, dir := newFixture(t, Options{Interval: 10 * time.Millisecond})
	writeStep(t, dir, "r", 1)
	fake.release = make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, ln, 5*time.Second) }()
	url := "http://" + ln.Addr().String()
	deadline := time.Now().Add(5 * time.Second)
	for { // Serve runs Watch: wait for r@1
		if got, _ := f.Model("r"); got == "r@1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Serve's watch did not load r@1")
		}
		time.Sleep(5 * time.Millisecond)
	}
	client := &http.Client{}
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"r","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if first, err := br.ReadString('\n'); err != nil || !strings.Contains(first, `"r@1"`) {
		t.Fatalf("first chunk %q, %v", first, err)
	}
	cancel()
	for !f.draining.Load() {
		time.Sleep(time.Millisecond)
	}
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"r"}`)))
	if rec.Code != 503 {
		t.Fatalf("request while draining: %d", rec.Code)
	}
	close(fake.release)
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("stream in flight was cut: %q, %v", rest, err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
