package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/safetensors"
)

// poisonTensor rewrites the safetensors file at path with element at of
// its tensor name set to v (the file's other tensors and metadata kept),
// as a diverged step or a corrupt copy leaves it.
func poisonTensor(t *testing.T, path, name string, at int, v float32) {
	t.Helper()
	f, err := safetensors.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	found := false
	for _, n := range f.Names() {
		info, _ := f.Info(n)
		vals, err := f.Float32(n)
		if err != nil {
			t.Fatal(err)
		}
		if n == name {
			vals[at], found = v, true
		}
		st, err := safetensors.FromFloat32Tensor(n, info.DType, info.Shape, vals)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, st)
	}
	meta := f.Metadata()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("%s has no tensor %q (it has %v)", path, name, ts)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(path, ts, meta); err != nil {
		t.Fatal(err)
	}
}

// copyStep copies a step folder to a new folder under dir.
func copyStep(t *testing.T, step, dst string) string {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(step)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestNonFiniteAdapterRefused runs hone-train as a process on adapters
// and optimizer states that hold a NaN or an infinity: --init-adapter
// naming such a folder, and --resume of a run whose latest step holds
// one in its adapter or in its optimizer's moments. Each exits 2 naming
// the file, the tensor and the first bad element, before training; a
// fresh run leaves no run folder. Before, the values were read as they
// were and the run trained NaN from its first step without a word.
func TestNonFiniteAdapterRefused(t *testing.T) {
	md, in, out, init := warmAdapter(t)
	const loraB = "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"
	bad := copyStep(t, init, filepath.Join(t.TempDir(), "bad-init"))
	wbad := filepath.Join(bad, "adapter_model.safetensors")
	poisonTensor(t, wbad, loraB, 2, float32(math.NaN()))
	for _, job := range []string{"grpo", "sft"} {
		code, text := runMain(t, job, "--model", md, "--run", "from-bad", "--out", out, "--threads", "1", "--steps", "1",
			"--init-adapter", bad, in)
		checkNonFinite(t, job+" --init-adapter", code, text, wbad, loraB, "NaN at element 2")
		if _, err := os.Stat(filepath.Join(out, "from-bad")); !os.IsNotExist(err) {
			t.Fatalf("%s --init-adapter with a NaN left a run folder (%v)", job, err)
		}
	}

	resume := func() (int, string) {
		return runMain(t, "sft", "--model", md, "--run", "warm", "--out", out, "--rank", "2", "--threads", "1", "--steps", "2", "--resume", in)
	}
	keep := copyStep(t, init, filepath.Join(t.TempDir(), "keep"))
	poisonTensor(t, filepath.Join(init, "adapter_model.safetensors"), loraB, 1, float32(math.Inf(1)))
	code, text := resume()
	checkNonFinite(t, "--resume, adapter", code, text, filepath.Join(init, "adapter_model.safetensors"), loraB, "+Inf at element 1")

	restoreStep(t, keep, init)
	opt := filepath.Join(init, "optimizer.safetensors")
	of, err := safetensors.OpenFile(opt)
	if err != nil {
		t.Fatal(err)
	}
	var sq string
	for _, n := range of.Names() {
		if strings.HasSuffix(n, ".exp_avg_sq") {
			sq = n
			break
		}
	}
	of.Close()
	poisonTensor(t, opt, sq, 0, float32(math.NaN()))
	code, text = resume()
	checkNonFinite(t, "--resume, optimizer", code, text, opt, sq, "NaN at element 0")
	if _, err := os.Stat(filepath.Join(out, "warm", "step-000002")); !os.IsNotExist(err) {
		t.Fatalf("a refused resume saved step 2 (%v)", err)
	}

	restoreStep(t, keep, init) // the untouched step still resumes
	if code, text := resume(); code != 0 {
		t.Fatalf("--resume of the good step: exit %d\n%s", code, text)
	}
}

// restoreStep puts the copy keep back as the step folder step.
func restoreStep(t *testing.T, keep, step string) {
	t.Helper()
	if err := os.RemoveAll(step); err != nil {
		t.Fatal(err)
	}
	copyStep(t, keep, step)
}

func checkNonFinite(t *testing.T, what string, code int, text, file, tensor, elem string) {
	t.Helper()
	for _, want := range []string{file, fmt.Sprintf("%q", tensor), elem} {
		if !strings.Contains(text, want) {
			t.Errorf("%s: output does not name %s:\n%s", what, want, text)
		}
	}
	if code != cli.ExitUsage {
		t.Errorf("%s: exit %d, want %d\n%s", what, code, cli.ExitUsage, text)
	}
}
