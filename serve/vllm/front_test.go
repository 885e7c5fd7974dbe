package vllm

import (
	"bufio"
	"cmp"
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

	"github.com/hone-rl/hone/internal/waitfor"
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
	// failMsg, when it has the name, is the message of that failed load.
	failMsg map[string]string
	// unloadMissing is the status an unload of a name not loaded gets:
	// 404 (vLLM today) when zero, 400 as older vLLM releases answered.
	unloadMissing int
	chats         []map[string]any
	auth          []string
	seen          []string // "METHOD request-target" of every request received
	// release, when set, holds the second stream chunk until closed.
	release chan struct{}
	// failUnload maps a lora_name to the status its unload is answered with.
	failUnload map[string]int
	// read holds, per loaded name, the adapter_config.json it was loaded
	// from: what vLLM serves under the name, whatever the folder holds now.
	read map[string]string
	// probe, when set, is called as each LoRA call arrives (before it is
	// answered); its results are kept in probed, one per call.
	probe  func() string
	probed []string
}

func (v *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m map[string]any
	json.Unmarshal(body, &m)
	v.mu.Lock()
	probe := v.probe
	v.mu.Unlock()
	if probe != nil && strings.HasSuffix(r.URL.Path, "_lora_adapter") {
		got := probe()
		v.mu.Lock()
		v.probed = append(v.probed, got)
		v.mu.Unlock()
	}
	v.mu.Lock()
	v.auth = append(v.auth, r.Header.Get("Authorization"))
	v.seen = append(v.seen, r.Method+" "+r.RequestURI)
	// vLLM's routes are FastAPI routes, and FastAPI, unlike Starlette,
	// does not answer HEAD on a GET route: 405 (fastapi#1773).
	if (r.URL.Path == "/health" || r.URL.Path == "/v1/models") && r.Method != http.MethodGet {
		v.mu.Unlock()
		w.Header().Set("Allow", "GET")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, `{"detail":"Method Not Allowed"}`)
		return
	}
	switch r.URL.Path {
	case "/health":
		v.mu.Unlock()
		return
	case "/metrics":
		v.mu.Unlock()
		io.WriteString(w, "vllm:num_requests_running 0\n")
		return
	case "/v1/load_lora_adapter", "/v1/unload_lora_adapter":
		v.calls = append(v.calls, call{r.Method, r.URL.Path, m})
		name, _ := m["lora_name"].(string)
		if r.URL.Path == "/v1/load_lora_adapter" {
			if st := v.failOn[name]; st != 0 {
				msg, _ := json.Marshal(cmp.Or(v.failMsg[name], "cannot load"))
				v.mu.Unlock()
				http.Error(w, `{"error":{"message":`+string(msg)+`,"type":"BadRequestError","code":`+fmt.Sprint(st)+`}}`, st)
				return
			}
			if slices.Contains(v.loaded, name) {
				v.mu.Unlock()
				http.Error(w, `{"error":{"message":"The lora adapter '`+name+`' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.","type":"InvalidUserInput","param":null,"code":400}}`, 400)
				return
			}
			v.loaded = append(v.loaded, name)
			cfg, _ := os.ReadFile(filepath.Join(fmt.Sprint(m["lora_path"]), "adapter_config.json"))
			if v.read == nil {
				v.read = map[string]string{}
			}
			v.read[name] = string(cfg)
			v.mu.Unlock()
			fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", name)
			return
		}
		if st := v.failUnload[name]; st != 0 {
			v.mu.Unlock()
			http.Error(w, `{"error":{"message":"cannot unload","type":"InternalServerError","code":`+fmt.Sprint(st)+`}}`, st)
			return
		}
		if !slices.Contains(v.loaded, name) {
			st := cmp.Or(v.unloadMissing, 404)
			v.mu.Unlock()
			http.Error(w, `{"error":{"message":"The lora adapter '`+name+`' cannot be found.","type":"NotFoundError","param":null,"code":`+fmt.Sprint(st)+`}}`, st)
			return
		}
		v.loaded = slices.DeleteFunc(v.loaded, func(s string) bool { return s == name })
		delete(v.read, name)
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
		if model, _ := m["model"].(string); model != "base" && !slices.Contains(v.loaded, model) {
			v.mu.Unlock()
			http.Error(w, `{"error":{"message":"The model `+"`"+model+"`"+` does not exist.","type":"NotFoundError","param":"model","code":404}}`, 404)
			return
		}
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

// takeProbed returns what probe returned at each LoRA call since the last take.
func (v *fakeVLLM) takeProbed() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.probed
	v.probed = nil
	return p
}

// readFrom returns the adapter_config.json vLLM holds name with ("" if none).
func (v *fakeVLLM) readFrom(name string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.read[name]
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
	fake.failOn["r@2"] = 400
	p2 := writeStep(t, dir, "r", 2)
	err := f.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "still serving r@1") || !strings.Contains(err.Error(), "400") {
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
		// hone-serve's registry has no "r@02" or "r@+2": one step, one name.
		{"zero-padded version", "/v1/chat/completions", "secret", `{"model":"r@02"}`, 404, "model_not_found"},
		{"signed version", "/v1/chat/completions", "secret", `{"model":"r@+2"}`, 404, "model_not_found"},
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

// TestNewFrontRefusesNegativeBodyCap: a library caller's negative
// MaxBodyBytes is an error naming it, where it silently became the 8 MiB
// default, a limit the caller had not asked for; 0 still means the
// default.
func TestNewFrontRefusesNegativeBodyCap(t *testing.T) {
	if _, err := NewFront(Options{Upstream: "http://127.0.0.1:1", MaxBodyBytes: -1}); err == nil || !strings.Contains(err.Error(), "MaxBodyBytes") {
		t.Errorf("NewFront with MaxBodyBytes -1: %v, want an error naming MaxBodyBytes", err)
	}
	f, err := NewFront(Options{Upstream: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("NewFront with MaxBodyBytes 0: %v", err)
	}
	if f.o.MaxBodyBytes != 8<<20 {
		t.Errorf("MaxBodyBytes 0 became %d, want the 8 MiB default", f.o.MaxBodyBytes)
	}
}

// TestNewFrontRefusesNegativeLimits: a library caller's negative
// KeepAdapters, Interval or CallTimeout is an error naming it, as a
// negative MaxBodyBytes is, where each silently became its default (2
// versions, 2s, 2 min), a setting the caller had not asked for; 0 still
// means the default.
func TestNewFrontRefusesNegativeLimits(t *testing.T) {
	for _, c := range []struct {
		field string
		o     Options
	}{
		{"KeepAdapters", Options{KeepAdapters: -1}},
		{"Interval", Options{Interval: -time.Second}},
		{"CallTimeout", Options{CallTimeout: -time.Minute}},
	} {
		c.o.Upstream = "http://127.0.0.1:1"
		if _, err := NewFront(c.o); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewFront with a negative %s: %v, want an error naming %s", c.field, err, c.field)
		}
	}
	f, err := NewFront(Options{Upstream: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("NewFront with every limit 0: %v", err)
	}
	if f.o.KeepAdapters != 2 || f.o.Interval != 2*time.Second || f.o.CallTimeout != 2*time.Minute {
		t.Errorf("0 became KeepAdapters %d, Interval %v, CallTimeout %v; want the defaults 2, 2s, 2m0s", f.o.KeepAdapters, f.o.Interval, f.o.CallTimeout)
	}
}

// TestWatch: the poll loop loads a step that appears while it runs.
func TestWatch(t *testing.T) {
	fake, f, dir := newFixture(t, Options{Interval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Watch(ctx); close(done) }()
	p := writeStep(t, dir, "r", 1)
	waitfor.Until(t, 10*time.Second, "Watch to load r@1", func() bool { got, _ := f.Model("r"); return got == "r@1" })
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
	waitfor.Until(t, 10*time.Second, "Serve's watch to load r@1", func() bool { got, _ := f.Model("r"); return got == "r@1" })
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
	waitfor.Until(t, 10*time.Second, "the front to start draining", f.draining.Load)
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

// rawRequest sends one request with its request-target exactly as given,
// as curl --path-as-is does (Go's client would not send some of them), and
// returns the status, the Allow header and the body.
func rawRequest(t *testing.T, addr, method, target, key, body string) (int, string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: front\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, target, len(body))
	if key != "" {
		fmt.Fprintf(&req, "Authorization: Bearer %s\r\n", key)
	}
	req.WriteString("\r\n" + body)
	if _, err := io.WriteString(conn, req.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Allow"), string(b)
}

func (v *fakeVLLM) takeSeen() (seen, auth []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	seen, auth = v.seen, v.auth
	v.seen, v.auth = nil, nil
	return seen, auth
}

// TestAllowList: only the allow-listed routes reach vLLM, each /v1 one
// behind our key and carrying vLLM's key; any other path, however spelled
// (the review's repro: POST //v1/load_lora_adapter without a key reached
// vLLM with vLLM's key), is 404 and vLLM never sees it.
func TestAllowList(t *testing.T) {
	fake, f, _ := newFixture(t, Options{APIKey: "secret", UpstreamKey: "vkey"})
	front := httptest.NewServer(f)
	defer front.Close()
	addr := front.Listener.Addr().String()
	adapter := `{"lora_name":"evil","lora_path":"/etc"}`
	blocked := []struct{ method, target, body string }{
		{"POST", "//v1/load_lora_adapter", adapter},
		{"POST", "//v1/unload_lora_adapter", `{"lora_name":"r@1"}`},
		{"POST", "//v1/chat/completions", `{"model":"base"}`},
		{"POST", "/v1/load_lora_adapter", adapter},
		{"POST", "/v1/unload_lora_adapter", `{"lora_name":"r@1"}`},
		{"POST", "/v1//load_lora_adapter", adapter},
		{"POST", "/v1/./load_lora_adapter", adapter},
		{"POST", "/v1/x/../load_lora_adapter", adapter},
		{"POST", "/v1/load%5Flora_adapter", adapter},
		{"POST", "/v1/load_lora_adapter/", adapter},
		{"POST", "/v1/chat%2Fcompletions", `{"model":"base"}`},
		{"POST", "/v1/./chat/completions", `{"model":"base"}`},
		{"POST", "/v1/chat/completions/", `{"model":"base"}`},
		{"POST", "/invocations", `{"model":"base"}`},
		{"POST", "/sleep", ""},
		{"POST", "/wake_up", ""},
		{"POST", "/reset_prefix_cache", ""},
		{"POST", "/tokenize", `{"prompt":"x"}`},
		{"GET", "/version", ""},
		{"GET", "//health", ""},
		{"GET", "/", ""},
	}
	for _, key := range []string{"", "secret"} {
		for _, c := range blocked {
			status, _, body := rawRequest(t, addr, c.method, c.target, key, c.body)
			var e struct {
				Error struct{ Message, Type string }
			}
			if status != 404 || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error.Message, "no route") {
				t.Errorf("%s %s (key %q): %d %s; want 404 in an error object", c.method, c.target, key, status, body)
			}
		}
	}
	if seen, _ := fake.takeSeen(); len(seen) != 0 {
		t.Fatalf("vLLM received requests off the allow-list: %q", seen)
	}
	// A doubled slash before a real route says how to send it.
	if _, _, body := rawRequest(t, addr, "POST", "//v1/chat/completions", "secret", `{}`); !strings.Contains(body, "send the path as /v1/chat/completions") {
		t.Errorf("doubled slash: %s; want the canonical path named", body)
	}

	// The /v1 routes need our key; nothing reaches vLLM without it.
	for _, c := range []struct{ method, target string }{{"POST", "/v1/chat/completions"}, {"POST", "/v1/completions"}, {"GET", "/v1/models"}} {
		if status, _, body := rawRequest(t, addr, c.method, c.target, "", `{"model":"base"}`); status != 401 || !strings.Contains(body, "invalid_api_key") {
			t.Errorf("%s %s without a key: %d %s; want 401", c.method, c.target, status, body)
		}
		if status, _, _ := rawRequest(t, addr, c.method, c.target, "wrong", `{"model":"base"}`); status != 401 {
			t.Errorf("%s %s with a wrong key: %d; want 401", c.method, c.target, status)
		}
	}
	if seen, _ := fake.takeSeen(); len(seen) != 0 {
		t.Fatalf("vLLM received unauthenticated requests: %q", seen)
	}

	// A route with the wrong method is 405 and stays here.
	if status, allow, _ := rawRequest(t, addr, "GET", "/v1/chat/completions", "secret", ""); status != 405 || allow != "POST" {
		t.Errorf("GET /v1/chat/completions: %d Allow %q; want 405 Allow POST", status, allow)
	}
	if status, allow, _ := rawRequest(t, addr, "DELETE", "/v1/models", "secret", ""); status != 405 || allow != "GET" {
		t.Errorf("DELETE /v1/models: %d Allow %q; want 405 Allow GET", status, allow)
	}
	if seen, _ := fake.takeSeen(); len(seen) != 0 {
		t.Fatalf("vLLM received a request with the wrong method: %q", seen)
	}

	// What is forwarded: the checked path without its query; vLLM's key
	// on the /v1 routes only, never on the open ones, whatever the client sent.
	for _, c := range []struct{ method, target, key string }{
		{"POST", "/v1/chat/completions?x=1", "secret"},
		{"GET", "/v1/models", "secret"},
		{"GET", "/health", ""},
		{"GET", "/metrics", "secret"},
	} {
		if status, _, body := rawRequest(t, addr, c.method, c.target, c.key, `{"model":"base"}`); status != 200 {
			t.Errorf("%s %s: %d %s; want 200", c.method, c.target, status, body)
		}
	}
	seen, auth := fake.takeSeen()
	want := []string{"POST /v1/chat/completions", "GET /v1/models", "GET /health", "GET /metrics"}
	if !slices.Equal(seen, want) || !slices.Equal(auth, []string{"Bearer vkey", "Bearer vkey", "", ""}) {
		t.Fatalf("vLLM received %q with Authorization %q; want %q with vLLM's key on the /v1 routes only", seen, auth, want)
	}

	// Without a key of our own the allow-list still holds.
	fake2, open, _ := newFixture(t, Options{UpstreamKey: "vkey"})
	front2 := httptest.NewServer(open)
	defer front2.Close()
	for _, target := range []string{"/v1/load_lora_adapter", "//v1/load_lora_adapter", "/sleep"} {
		if status, _, _ := rawRequest(t, front2.Listener.Addr().String(), "POST", target, "", adapter); status != 404 {
			t.Errorf("keyless front, POST %s: %d; want 404", target, status)
		}
	}
	if seen, _ := fake2.takeSeen(); len(seen) != 0 {
		t.Fatalf("a keyless front forwarded %q", seen)
	}
}

// TestReloadAfterUpstreamRestart: a vLLM that restarted under a running
// front holds no adapter; its 404 "does not exist" for the version
// "<run>" maps to makes the next Sync load that version again, instead of
// every request for "<run>" failing until the trainer writes a new step
// (never, for a run that waits on what it collects).
func TestReloadAfterUpstreamRestart(t *testing.T) {
	fake, f, dir := newFixture(t, Options{})
	ctx := context.Background()
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	front := httptest.NewServer(f)
	defer front.Close()
	chat := func() int {
		resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"r","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := chat(); st != 200 {
		t.Fatalf("chat before the restart: %d", st)
	}
	fake.mu.Lock()
	fake.loaded = nil // vLLM restarted: it holds no adapter
	fake.mu.Unlock()
	if st := chat(); st != 404 {
		t.Fatalf("chat right after the restart: %d, want vLLM's 404", st)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	if st := chat(); st != 200 {
		t.Fatalf("chat after the next Sync: %d, want r@1 served again", st)
	}
	// A name vLLM never held (a typo of the base model) changes nothing.
	resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"bsae"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls())
}

// TestHeadOnGetRoutes: the front takes HEAD on its GET routes, as the
// embedded server does; vLLM (FastAPI) answers HEAD on them 405, so the
// front asks vLLM with GET and sends the client the headers alone, the
// length of /v1/models with its "<run>" aliases among them.
func TestHeadOnGetRoutes(t *testing.T) {
	fake, f, dir := newFixture(t, Options{APIKey: "secret"})
	writeStep(t, dir, "r", 1)
	if err := f.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(f)
	defer front.Close()
	ask := func(method, target string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, front.URL+target, nil)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	fake.takeSeen()
	for _, target := range []string{"/health", "/v1/models"} {
		get := ask(http.MethodGet, target)
		head := ask(http.MethodHead, target)
		if head.StatusCode != http.StatusOK || head.ContentLength != get.ContentLength {
			t.Errorf("HEAD %s: %d, length %d; want 200 and GET's length %d", target, head.StatusCode, head.ContentLength, get.ContentLength)
		}
	}
	seen, _ := fake.takeSeen()
	if want := []string{"GET /health", "GET /health", "GET /v1/models", "GET /v1/models"}; !slices.Equal(seen, want) {
		t.Fatalf("vLLM received %q; want %q", seen, want)
	}
}

// TestReloadServedAfterRestartBehindRefusedStep: the latest step was
// refused, so "<run>" served the previous one; vLLM restarts and forgets
// it. The next Sync loads the version "<run>" served again, as it would
// the current step. It used to drop that version and, the latest step
// being refused and unchanged, load nothing: "<run>" went to vLLM as it
// was and got 404 until the trainer wrote another step.
func TestReloadServedAfterRestartBehindRefusedStep(t *testing.T) {
	fake, f, dir := newFixture(t, Options{})
	ctx := context.Background()
	p1 := writeStep(t, dir, "r", 1)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	fake.failOn["r@2"] = 400
	p2 := writeStep(t, dir, "r", 2)
	if err := f.Sync(ctx); err == nil {
		t.Fatal("Sync of a refused step: no error")
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1), load("r@2", p2))
	front := httptest.NewServer(f)
	defer front.Close()
	chat := func() int {
		resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"r","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := chat(); st != 200 {
		t.Fatalf("chat on r@1 behind the refused r@2: %d", st)
	}
	fake.mu.Lock()
	fake.loaded = nil // vLLM restarted: it holds no adapter
	fake.mu.Unlock()
	if st := chat(); st != 404 {
		t.Fatalf("chat right after the restart: %d, want vLLM's 404", st)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, fake.takeCalls(), load("r@1", p1))
	if st := chat(); st != 200 {
		t.Fatalf("chat after the next Sync: %d, want r@1 served again", st)
	}
	if got, _ := f.Model("r"); got != "r@1" {
		t.Fatalf(`Model("r") = %q, want r@1`, got)
	}
}
