package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/format/trajectory"
)

// startQwen3Serve runs the real hone-serve on a copy of the tiny model
// with Qwen3's chat template, which reads enable_thinking, behind a tap
// that keeps each request's chat_template_kwargs as sent.
func startQwen3Serve(t *testing.T) (string, func() []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS("../../serve/testdata/tiny")); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../testdata/templates/qwen3/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	var tc struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil || !strings.Contains(tc.ChatTemplate, "enable_thinking") {
		t.Fatalf("qwen3 template: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(tc.ChatTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	up := "http://" + openaitest.StartProcess(t, filepath.Join(binDir, "hone-serve"), "--model", dir, "--port", "0", "--threads", "1")
	var mu sync.Mutex
	var sent []string
	tap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Kwargs json.RawMessage `json:"chat_template_kwargs"`
		}
		json.Unmarshal(body, &req)
		mu.Lock()
		sent = append(sent, string(req.Kwargs))
		mu.Unlock()
		resp, err := http.Post(up+r.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(tap.Close)
	return tap.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), sent...)
	}
}

// TestChatTemplateKwargs: hone-collect had no way to send chat template
// kwargs (Qwen3's {"enable_thinking": false}), so its rollouts were served
// under another prompt than an agent's that sent them, and nothing in the
// file said which prompt training should lay them out under. Now
// --chat-template-kwargs goes on every model call as chat_template_kwargs
// and each row records it under trajectory.MetadataKeyChatTemplateKwargs;
// a value that is not a JSON object is a usage error.
func TestChatTemplateKwargs(t *testing.T) {
	base, sent := startQwen3Serve(t)
	out := filepath.Join(t.TempDir(), "k.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "1", "-G", "2", "--max-turns", "2", "--model", "tiny",
		"--base-url", base, "--max-tokens", "3", "--seed", "3", "-o", out,
		"--chat-template-kwargs", `{ "enable_thinking" : false }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	calls := sent()
	if len(calls) < 2 {
		t.Fatalf("%d model calls", len(calls))
	}
	for i, k := range calls {
		if strings.ReplaceAll(k, " ", "") != `{"enable_thinking":false}` {
			t.Errorf("call %d sent chat_template_kwargs %q", i, k)
		}
	}
	for _, g := range read(t, out) {
		for _, tr := range g.Trajectories {
			if got := tr.Metadata[trajectory.MetadataKeyChatTemplateKwargs]; got != `{"enable_thinking":false}` {
				t.Errorf("trajectory %s records %q", tr.ID, got)
			}
		}
	}

	// Without the flag nothing is sent and nothing recorded.
	out2 := filepath.Join(t.TempDir(), "none.parquet")
	if r := collectBin(t, "--env", "guess", "--groups", "1", "-G", "1", "--max-turns", "1", "--model", "tiny",
		"--base-url", base, "--max-tokens", "3", "-o", out2); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if last := sent(); last[len(last)-1] != "" {
		t.Errorf("without the flag, sent chat_template_kwargs %q", last[len(last)-1])
	}
	for _, g := range read(t, out2) {
		if v, ok := g.Trajectories[0].Metadata[trajectory.MetadataKeyChatTemplateKwargs]; ok {
			t.Errorf("without the flag, recorded %q", v)
		}
	}

	for _, bad := range []string{`[1]`, `{"enable_thinking":`, `"x"`} {
		r := collectBin(t, "--env", "guess", "--groups", "1", "--model", "tiny", "--base-url", base, "-o", out2, "--chat-template-kwargs", bad)
		if r.code != 2 || !strings.Contains(r.stderr, "--chat-template-kwargs") || !strings.Contains(r.stderr, "JSON object") {
			t.Errorf("--chat-template-kwargs %s: exit %d, want 2 naming the flag: %s", bad, r.code, r.stderr)
		}
	}
}

// TestChatTemplateKwargsScriptedWarned runs hone-collect with a scripted
// policy and --chat-template-kwargs: no model is called and no row
// records the kwargs, so the run writes its rows and warns once, naming
// the flag; without the flag it warns about nothing. Before, the flag
// was ignored without a word, and a user who meant the scripted rows to
// be laid out under those kwargs got rows that name none.
func TestChatTemplateKwargsScriptedWarned(t *testing.T) {
	dir := t.TempDir()
	for i, kw := range []string{`{"enable_thinking":false}`, ""} {
		out := filepath.Join(dir, string(rune('a'+i))+".parquet")
		args := []string{"--env", "guess", "--groups", "2", "-G", "2", "--policy", "scripted:bisect", "-o", out}
		if kw != "" {
			args = append(args, "--chat-template-kwargs", kw)
		}
		r := collectBin(t, args...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d: %s", kw, r.code, r.stderr)
		}
		if gs := read(t, out); len(gs) != 2 {
			t.Fatalf("%q: %d groups, want 2", kw, len(gs))
		}
		var warns []string
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.Contains(l, "WARN") {
				warns = append(warns, l)
			}
		}
		if kw == "" {
			if len(warns) != 0 {
				t.Errorf("no kwargs: warned %q, want none", warns)
			}
			continue
		}
		if len(warns) != 1 || !strings.Contains(warns[0], "--chat-template-kwargs") || !strings.Contains(warns[0], "scripted") {
			t.Errorf("warnings %q, want one naming --chat-template-kwargs and the scripted policy\n%s", warns, r.stderr)
		}
	}
}

// Regression: hone-collect scenarios had no --chat-template-kwargs, so a
// Qwen3 task writer always ran with thinking on, spending the call's
// --max-tokens on a reasoning the JSON schema had no room for. The flag
// now goes on every call of the subcommand as it does on the main run's
// (here to the real hone-serve with Qwen3's template); a value that is not
// a JSON object is a usage error.
func TestScenariosChatTemplateKwargs(t *testing.T) {
	base, sent := startQwen3Serve(t)
	mcpURL := startShoutMCP(t)
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	args := []string{"scenarios", "--mcp-url", mcpURL, "--model", "tiny", "--base-url", base, "-n", "2", "--calls", "2",
		"--max-tokens", "100", "--no-summary", "-o", out}
	r := collectBin(t, append(args, "--chat-template-kwargs", `{"enable_thinking": false}`)...)
	calls := sent()
	if len(calls) == 0 {
		t.Fatalf("no model call; exit %d: %s", r.code, r.stderr)
	}
	for i, k := range calls {
		if strings.ReplaceAll(k, " ", "") != `{"enable_thinking":false}` {
			t.Errorf("call %d sent chat_template_kwargs %q", i, k)
		}
	}
	r = collectBin(t, append(args, "--chat-template-kwargs", `[1]`)...)
	if r.code != 2 || !strings.Contains(r.stderr, "--chat-template-kwargs") || !strings.Contains(r.stderr, "JSON object") {
		t.Errorf("--chat-template-kwargs [1]: exit %d, want 2 naming the flag: %s", r.code, r.stderr)
	}
}
