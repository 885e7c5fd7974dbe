package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/internal/gobuild"
)

// lengthsEnv is a stdio environment whose first scenario opens with a
// message that fits the test's context of 384 tokens only without a
// completion of 200, whose second opens with one longer than the context,
// and every other with a short one; each episode ends after one turn with
// reward 1.
const lengthsEnv = `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello":
        out = {"name": "lengths", "reward_range": [0, 1]}
    elif op == "scenarios":
        out = {"scenarios": [{"id": "s-%d" % i} for i in range(req["n"])]}
    elif op == "reset":
        n = {"s-0": 70, "s-1": 300}.get(req["scenario"]["id"], 5)
        out = {"messages": [{"role": "user", "content": "x " * n}]}
    else:
        out = {"messages": [], "done": True, "reward": 1}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
`

// TestMaxTokensClampedByServerDoesNotStop: hone-serve started with
// --generation-config auto clamps a max_tokens over the model's
// max_new_tokens to it, and a prompt too long for the clamped completion
// is refused in the context's words, naming the clamped size, not
// --max-tokens; a prompt longer than the context is refused naming only
// the prompt. A --max-tokens at or over the model's context is then no
// refusal of every call: only the long prompts' episodes fail, and the
// short prompts' are answered. The run must not stop at the first call.
func TestMaxTokensClampedByServerDoesNotStop(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	script := filepath.Join(t.TempDir(), "lengths.py")
	if err := os.WriteFile(script, []byte(lengthsEnv), 0o644); err != nil {
		t.Fatal(err)
	}
	const ctxLen = 384
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
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"max_new_tokens": 200}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "SHA256SUMS")) // the files changed: checked no more
	bin := t.TempDir()
	if err := gobuild.Commands(context.Background(), bin, "../cmd/hone-serve"); err != nil {
		t.Fatal(err)
	}
	base := "http://" + openaitest.StartProcess(t, filepath.Join(bin, "hone-serve"), "--model", dir, "--port", "0", "--threads", "1",
		"--generation-config", "auto") + "/v1"

	var out bytes.Buffer
	temp := 1.0
	o := collect.Options{
		Env: "stdio", EnvOpts: map[string]string{"cmd": py + " -S " + script},
		Groups: 4, GroupSize: 1, Concurrency: 1, Seed: 5, Run: "r", Policy: "model", Out: &out,
		Model: collect.ModelOptions{BaseURL: base, Model: "tiny", Temperature: &temp, MaxTokens: 1000, Backoff: time.Millisecond},
	}
	st, err := runStats(context.Background(), o)
	if errors.Is(err, collect.ErrMaxTokensOverCap) {
		t.Fatalf("run stopped: %v; want only the long prompt's episode failed", err)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if st.Groups != 4 || st.Failures != 2 {
		t.Fatalf("%d groups, %d failed; want 4 groups, 2 failed (the long prompts')", st.Groups, st.Failures)
	}
	for _, g := range readGroups(t, out.Bytes()) {
		for _, tr := range g.Trajectories {
			want := map[string]string{"s-0": "200 in the completion", "s-1": "input tokens"}[tr.ScenarioID]
			if want == "" && tr.Error != "" || want != "" && !strings.Contains(tr.Error, want) {
				t.Errorf("%s: error %q; want one saying %q only for the long prompts (s-0: the clamped completion's, s-1: the prompt's)", tr.ScenarioID, tr.Error, want)
			}
		}
	}
}
