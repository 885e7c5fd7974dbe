package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hone-rl/hone/train/model"
)

// torchShape names the shape of reference.py's BENCH_SHAPES that c has, so
// that the PyTorch reference decodes exactly the served model's shape (with
// its own random weights: decode speed does not depend on their values).
func torchShape(c model.Config) (string, error) {
	type shape struct {
		family                                         string
		vocab, hidden, inter, layers, heads, kvh, hdim int
		tie                                            bool
	}
	shapes := map[string]shape{
		"tiny": {"qwen2", 4096, 256, 688, 4, 8, 4, 32, false},
		"05b":  {"qwen2", 151936, 896, 4864, 24, 14, 2, 64, true},
	}
	got := shape{c.Family, c.Vocab, c.Hidden, c.Intermediate, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.TieEmbeddings}
	for name, s := range shapes {
		if s == got && c.QKVBias && !c.QKNorm {
			return name, nil
		}
	}
	return "", fmt.Errorf("the model's shape (%s, vocab %d, hidden %d, MLP %d, %d layers, %d/%d heads of %d, tied %v) is none of "+
		"reference.py's bench shapes (tiny: qwen2 256/688/4 layers/8/4 heads/vocab 4096; 05b: Qwen2.5-0.5B); pass --torch=false",
		c.Family, c.Vocab, c.Hidden, c.Intermediate, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.TieEmbeddings)
}

// torchResult is reference.py bench-decode's BENCH line.
type torchResult struct {
	Batch      int     `json:"batch"`
	Tokens     int     `json:"tokens"`
	TokensPerS float64 `json:"tokens_per_s"` // decode steps after the prompt, all sequences
	PrefillS   float64 `json:"prefill_s"`    // the prompt step, which yields the first token
	Torch      string  `json:"torch"`
	Threads    int     `json:"threads"`
}

// torchDecode runs reference.py bench-decode once: batch sequences, a prompt
// of prompt tokens, then tokens-1 single-token steps, so that each sequence
// gets tokens tokens like a served stream.
func torchDecode(ctx context.Context, o options, shape string, batch int) (torchResult, error) {
	args := []string{o.reference, "bench-decode", "--shape", shape, "--batch", fmt.Sprint(batch),
		"--prompt", fmt.Sprint(o.prompt), "--tokens", fmt.Sprint(max(o.tokens-1, 1)), "--dtype", "f32",
		"--threads", fmt.Sprint(o.torchThreads)}
	cmd := exec.CommandContext(ctx, o.python, args...)
	cmd.Env = torchEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return torchResult{}, fmt.Errorf("%s %s: %w: %s", o.python, strings.Join(args, " "), err, msg)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "BENCH "); ok {
			var r torchResult
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				return r, fmt.Errorf("reference.py: bad BENCH line %q: %w", l, err)
			}
			return r, nil
		}
	}
	return torchResult{}, fmt.Errorf("%s %s: no BENCH line in its output", o.python, strings.Join(args, " "))
}

// torchEnv is this process's environment (the BLAS settings are inherited,
// never changed) with OMP_WAIT_POLICY=PASSIVE when unset: libgomp's spinning
// otherwise fights OpenBLAS's threads.
func torchEnv() []string {
	env := os.Environ()
	if os.Getenv("OMP_WAIT_POLICY") == "" {
		env = append(env, "OMP_WAIT_POLICY=PASSIVE")
	}
	return env
}

// blasEnv lists the BLAS-related variables both contenders run under.
func blasEnv() string {
	var kv []string
	for _, e := range torchEnv() {
		for _, p := range []string{"OPENBLAS_", "OMP_", "GOTO", "GOMAXPROCS="} {
			if strings.HasPrefix(e, p) {
				kv = append(kv, e)
			}
		}
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// findReference looks for testdata/golden/model/reference.py in the working
// directory and its parents (go run starts in the caller's directory).
func findReference() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding reference.py: %w", err)
	}
	for {
		p := filepath.Join(dir, "testdata", "golden", "model", "reference.py")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("testdata/golden/model/reference.py not found above the working directory; pass --reference")
		}
		dir = up
	}
}
