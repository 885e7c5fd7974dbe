package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestGenerationConfigFolder: as vLLM's --generation-config <folder>, the
// sampling defaults come from that folder's generation_config.json (read
// as --generation-config auto reads the model folder's), not the model's;
// before, any value other than auto or vllm was refused at start. A
// folder without generation_config.json is refused naming it, where vLLM
// would quietly keep its fixed defaults: a path given by hand that holds
// nothing is most likely a mistake.
func TestGenerationConfigFolder(t *testing.T) {
	gdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(gdir, "generation_config.json"), []byte(`{"do_sample":true,"temperature":0.0,"max_new_tokens":3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs waitfor.Buffer
	ts := startServer(t, Options{Model: tinyDir(t), GenerationConfig: gdir, MaxTokens: 16, Log: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	status, out := ts.post(t, "/v1/completions", `{"model":"`+ts.s.name+`","prompt":"hi","n":3,"seed":3,"ignore_eos":true,"return_token_ids":true,"max_tokens":10}`)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, out)
	}
	var a struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
		}
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	for i, c := range a.Choices {
		if len(c.TokenIDs) != 3 || !slices.Equal(c.TokenIDs, a.Choices[0].TokenIDs) {
			t.Errorf("choice %d: %v; want the 3 tokens (max_new_tokens) of greedy decoding (temperature 0), as choice 0's %v", i, c.TokenIDs, a.Choices[0].TokenIDs)
		}
	}
	if !strings.Contains(logs.String(), gdir) || !strings.Contains(logs.String(), "temperature=0") {
		t.Errorf("the start's log does not name the folder whose defaults it took:\n%s", logs.String())
	}
	backend := ts.s.o.Backend
	ts.close(t)
	empty := t.TempDir()
	if _, err := NewServer(Options{Model: tinyDir(t), GenerationConfig: empty, Backend: backend}); err == nil ||
		!strings.Contains(err.Error(), "--generation-config") || !strings.Contains(err.Error(), filepath.Join(empty, "generation_config.json")) {
		t.Errorf("--generation-config naming a folder without generation_config.json: %v, want an error naming the flag and the file", err)
	}
}

// TestGenerationConfigFolderClampNamesFolder: a max_tokens clamped to the
// max_new_tokens of --generation-config <folder>'s file, and then over
// --max-tokens, is a 400 that names where the clamp came from. It said
// "generation_config.json's max_new_tokens 8 (--generation-config auto)",
// a flag value the server was not given, pointing at the model folder's
// file, which may hold another max_new_tokens or none.
func TestGenerationConfigFolderClampNamesFolder(t *testing.T) {
	gdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(gdir, "generation_config.json"), []byte(`{"max_new_tokens":8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Options{Model: tinyDir(t), GenerationConfig: gdir, MaxTokens: 4}, nil)
	status, out := ts.post(t, "/v1/completions", `{"model":"`+ts.s.name+`","prompt":"hi","max_tokens":10}`)
	var e struct {
		Error struct{ Message string }
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("%d %s: %v", status, out, err)
	}
	if status != http.StatusBadRequest || !strings.Contains(e.Error.Message, "max_new_tokens 8") ||
		!strings.Contains(e.Error.Message, filepath.Join(gdir, "generation_config.json")) || strings.Contains(e.Error.Message, "generation-config auto") {
		t.Errorf("max_tokens 10, %s's max_new_tokens 8, --max-tokens 4: %d %q; want a 400 naming the clamp to 8 and the folder's file, not --generation-config auto", gdir, status, e.Error.Message)
	}
}

// TestGenerationConfigFolderEOS: as vLLM (whose input processor adds the
// eos_token_id of the generation config it read, the --generation-config
// folder's, to a request's stop tokens), a request stops at an id that
// folder's generation_config.json lists as eos_token_id. Before, the
// folder gave the sampling defaults only, and the server kept stopping on
// the model folder's ids alone.
func TestGenerationConfigFolderEOS(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxTokens: 16}, nil)
	greedy := func(ts *testServer, ignoreEOS bool) ([]int32, string) {
		t.Helper()
		status, out := ts.post(t, "/v1/completions", `{"model":"`+ts.s.name+`","prompt":"hi","temperature":0,"return_token_ids":true,"max_tokens":8,"ignore_eos":`+strconv.FormatBool(ignoreEOS)+`}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, out)
		}
		var a struct {
			Choices []struct {
				TokenIDs     []int32 `json:"token_ids"`
				FinishReason string  `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(out), &a); err != nil || len(a.Choices) != 1 {
			t.Fatalf("%v: %s", err, out)
		}
		return a.Choices[0].TokenIDs, a.Choices[0].FinishReason
	}
	ids, _ := greedy(ts, true)
	backend := ts.s.o.Backend
	ts.close(t)
	// The first id after the first that greedy decoding had not given
	// yet, so that stopping on it ends the reply there and nowhere before.
	at := -1
	for i := 1; i < len(ids) && at < 0; i++ {
		if !slices.Contains(ids[:i], ids[i]) && !slices.Contains(ts.s.eos, ids[i]) {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("greedy decoding %v repeats one id: no id to stop on", ids)
	}
	gdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(gdir, "generation_config.json"), []byte(`{"eos_token_id":[`+strconv.Itoa(int(ids[at]))+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ts = startServer(t, Options{Model: tinyDir(t), GenerationConfig: gdir, MaxTokens: 16, Backend: backend}, nil)
	got, reason := greedy(ts, false)
	if reason != "stop" || len(got) < at || !slices.Equal(got[:at], ids[:at]) || len(got) > at+1 {
		t.Errorf("with %d as the folder's eos_token_id: %v (finish_reason %q), want %v ending there with finish_reason stop", ids[at], got, reason, ids[:at+1])
	}
	if again, _ := greedy(ts, true); !slices.Equal(again, ids) {
		t.Errorf("ignore_eos: %v, want %v: the folder's eos ids are eos ids, which ignore_eos ignores", again, ids)
	}
}

// TestGenerationConfigFolderWarnsOfDroppedStops: a --generation-config
// folder whose generation_config.json lists fewer eos ids than the model
// folder's (a file of sampling settings alone, none) makes replies run on
// past ids that hone-train ends a trained turn at (Llama 3's <|eot_id|>
// where the tokenizer's eos_token is <|end_of_text|>), as vLLM runs on,
// without a word. The server now warns at start, naming those ids (256
// here: 258 is also the tokenizer's eos_token, stopped on either way); a
// folder that lists them all is not warned of.
func TestGenerationConfigFolderWarnsOfDroppedStops(t *testing.T) {
	backend := ref.New()
	for _, c := range []struct {
		eos  string
		warn bool
	}{{`[5]`, true}, {`[258, 256]`, false}} {
		gdir := t.TempDir()
		if err := os.WriteFile(filepath.Join(gdir, "generation_config.json"), []byte(`{"temperature":0.7,"eos_token_id":`+c.eos+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		s, err := NewServer(Options{Model: tinyDir(t), GenerationConfig: gdir, Backend: backend, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		s.Engine().Shutdown(context.Background())
		warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "ids=[256]") && strings.Contains(logs.String(), "eos_token_id")
		if warned != c.warn {
			t.Errorf("folder eos_token_id %s over the model folder's [258 256] (258 the tokenizer's eos_token, which stays): warned %v, want %v; log:\n%s", c.eos, warned, c.warn, logs.String())
		}
	}
}
