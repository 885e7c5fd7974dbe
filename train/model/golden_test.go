package model

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"github.com/hone-rl/hone/format/safetensors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

const goldenDir = "../../testdata/golden/model"

const rerun = "rerun: sh testdata/golden/model/regen.sh (testdata/golden/model/reference.py, needs /usr/bin/python3 with torch)"

type goldenInputs struct {
	InputIDs    []int32   `json:"input_ids"`
	PositionIDs []int32   `json:"position_ids"`
	SeqStarts   []int32   `json:"seq_starts"`
	Targets     []int32   `json:"targets"`
	Weights     []float32 `json:"weights"`
}

type goldenValues struct {
	Logits     [][]float64          `json:"logits"`
	BaseLogits [][]float64          `json:"base_logits"`
	Logprobs   []float64            `json:"logprobs"`
	Entropy    []float64            `json:"entropy"`
	Loss       float64              `json:"loss"`
	Grads      map[string][]float64 `json:"-"`
	RawGrads   map[string]any       `json:"grads"`
}

type goldenCase struct {
	name   string
	model  *Model
	ad     *Adapter
	batch  *Batch
	weight []float32
	want   goldenValues
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s)", err, rerun)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func flatten(v any) []float64 {
	switch x := v.(type) {
	case float64:
		return []float64{x}
	case []any:
		var out []float64
		for _, e := range x {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return nil
}

func loadGoldenCase(t testing.TB, name string, be kernels.Backend) *goldenCase {
	t.Helper()
	dir := filepath.Join(goldenDir, name)
	m, err := Load(filepath.Join(dir, "model"), be)
	if err != nil {
		t.Fatalf("%v (%s)", err, rerun)
	}
	ad, err := ReadAdapter(filepath.Join(dir, "adapter"), &m.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := ad.Place(be); err != nil {
		t.Fatal(err)
	}
	var in goldenInputs
	readJSON(t, filepath.Join(dir, "inputs.json"), &in)
	b := &Batch{IDs: in.InputIDs, Pos: in.PositionIDs, Targets: in.Targets, SeqOff: append(append([]int32(nil), in.SeqStarts...), int32(len(in.InputIDs)))}
	gc := &goldenCase{name: name, model: m, ad: ad, batch: b, weight: in.Weights}
	readJSON(t, filepath.Join(dir, "golden.json"), &gc.want)
	gc.want.Grads = map[string][]float64{}
	for k, v := range gc.want.RawGrads {
		gc.want.Grads[k] = flatten(v)
	}
	return gc
}

// compare checks got against want elementwise with |got−want| ≤ tol·(|want| +
// rms(want)): relative error, with the tensor's RMS as the floor so values
// that happen to be near zero do not demand more than float32 can give.
func compare(t testing.TB, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, golden has %d (%s)", what, len(got), len(want), rerun)
	}
	var ss float64
	for _, w := range want {
		ss += w * w
	}
	floor := math.Sqrt(ss / float64(max(len(want), 1)))
	worst, at := 0.0, -1
	for i := range got {
		e := math.Abs(float64(got[i])-want[i]) / (math.Abs(want[i]) + floor)
		if math.IsNaN(e) || e > worst {
			worst, at = e, i
		}
	}
	if os.Getenv("HONE_TEST_VERBOSE") != "" {
		t.Logf("%s: worst relative error %.3g", what, worst)
	}
	if worst > tol || math.IsNaN(worst) {
		t.Errorf("%s: element %d = %v, golden %v (relative error %.3g > %.0e; %s)", what, at, got[at], want[at], worst, tol, rerun)
	}
}

func flat2(rows [][]float64) []float64 {
	var out []float64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

var goldenCases = []string{"gemma3", "llama", "llama3_long", "llama_bias", "mistral", "qwen2", "qwen3"}

func TestGolden(t *testing.T) {
	for _, be := range testBackends(t) {
		// qwen2 is stored as bf16, so holding it as bf16 in memory is exact
		// and must meet the same goldens.
		for _, name := range append(goldenCases, "qwen2+bf16") {
			t.Run(fmt.Sprintf("%s/%s", be.Name(), name), func(t *testing.T) { runGolden(t, be, name) })
		}
	}
}

// TestGoldenResident runs the goldens of every family through a backend
// that checks that each buffer an op sees is memory it allocated (as a
// device backend requires) and that Close and Free give all of it back.
func TestGoldenResident(t *testing.T) {
	for _, name := range append(goldenCases, "qwen2+bf16") {
		t.Run(name, func(t *testing.T) {
			be := kerneltest.Resident(testBackends(t)[1])
			runGolden(t, be, name)
			if n := be.Live(); n != 0 {
				t.Errorf("%d allocations (%d bytes) live after Close and Free, want 0", n, be.LiveBytes())
			}
		})
	}
}

// runGolden checks logits, logprobs, entropy and the LoRA gradients of
// golden case name ("+bf16": the matrices held as bfloat16) on be, then
// frees the model and adapter.
func runGolden(t *testing.T, be kernels.Backend, name string) {
	ctx := context.Background()
	folder, bf16 := strings.CutSuffix(name, "+bf16")
	gc := loadGoldenCase(t, folder, be)
	m, ad, b := gc.model, gc.ad, gc.batch
	defer ad.Free()
	defer m.Close()
	if bf16 {
		m32 := m
		var err error
		if m, err = LoadBF16(filepath.Join(goldenDir, folder, "model"), be); err != nil {
			t.Fatal(err)
		}
		defer m.Close() // and, first, m32 (deferred above)
		_ = m32
		if m.Embed.BF16 == nil || m.Blocks[0].MLP.Down.Weight.BF16 == nil {
			t.Fatal("LoadBF16 kept float32 matrices")
		}
	}

	logits, err := m.Logits(ctx, b, ad)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "logits", logits, flat2(gc.want.Logits), 1e-4)
	base, err := m.Logits(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "base logits", base, flat2(gc.want.BaseLogits), 1e-4)

	for _, ckpt := range []bool{false, true} {
		ad.ZeroGrad()
		p, err := m.Forward(ctx, b, ad, TrainOptions{Checkpoint: ckpt, Chunk: 64})
		if err != nil {
			t.Fatal(err)
		}
		compare(t, "logprobs", p.Logprob, gc.want.Logprobs, 1e-4)
		compare(t, "entropy", p.Entropy, gc.want.Entropy, 1e-4)
		err = p.Backward(ctx, gc.weight, nil)
		p.Release()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tn := range ad.Tensors() {
			want, ok := gc.want.Grads[tn.Name]
			if !ok {
				t.Fatalf("golden has no gradient for %s (%s)", tn.Name, rerun)
			}
			var grad []float32
			ad.Params(func(name string, _, g []float32) {
				if name == tn.Name {
					grad = g
				}
			})
			compare(t, fmt.Sprintf("checkpoint=%v d%s", ckpt, tn.Name), grad, want, 1e-3)
			n++
		}
		if n != len(gc.want.Grads) {
			t.Errorf("compared %d gradients, golden has %d", n, len(gc.want.Grads))
		}
	}
}

// The committed golden files are the ones reference.py wrote: their
// checksums match SHA256SUMS (written by regen.sh), so a hand edit shows.
func TestGoldenChecksums(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(goldenDir, "SHA256SUMS"))
	if err != nil {
		t.Fatalf("%v (%s)", err, rerun)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) < 10 {
		t.Fatalf("SHA256SUMS lists only %d files (%s)", len(lines), rerun)
	}
	for _, line := range lines {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: bad line %q", line)
		}
		b, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err != nil {
			t.Errorf("%v (%s)", err, rerun)
			continue
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != sum {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s (%s)", name, got, sum, rerun)
		}
	}
}

// A checkpoint split into shards (model.safetensors.index.json) loads to the
// same model as the single file.
func TestLoadSharded(t *testing.T) {
	be := testBackends(t)[0]
	src := filepath.Join(goldenDir, "llama", "model")
	m, err := Load(src, be)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, tn := range m.Tensors() {
		st, err := safetensors.FromFloat32Tensor(tn.Name, safetensors.F32, tn.Shape, tn.Values)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, st)
	}
	if err := safetensors.WriteSharded(dir, ts, 64<<10, nil); err != nil {
		t.Fatal(err)
	}
	if shards, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors")); len(shards) < 3 {
		t.Fatalf("only %d shards written; the test wants several", len(shards))
	}
	m2, err := Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	a, b := m.Tensors(), m2.Tensors()
	for i := range a {
		if a[i].Name != b[i].Name || fmt.Sprint(a[i].Values) != fmt.Sprint(b[i].Values) {
			t.Fatalf("tensor %s differs after sharding", a[i].Name)
		}
	}
}
