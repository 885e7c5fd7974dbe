package peft

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
)

const goldenDir = "../../testdata/golden/peft"

const rerun = "regenerate with: sh testdata/golden/peft/regen.sh"

// skipOrFail skips when /usr/bin/python3 or its torch is missing, except under CI
// where that is a failure.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	msg := why + "; install Debian python3-torch for /usr/bin/python3"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func TestGoldenChecksums(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(goldenDir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	n := 0
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err != nil {
			t.Fatalf("%v; %s", err, rerun)
		}
		h := sha256.Sum256(data)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: checksum differs from SHA256SUMS; %s", name, rerun)
		}
		n++
	}
	if n < 4 {
		t.Fatalf("SHA256SUMS lists %d files", n)
	}
}

type goldenValues struct {
	Scaling float64 `json:"scaling"`
	Tensors map[string]struct {
		Shape  []int     `json:"shape"`
		Values []float64 `json:"values"`
	} `json:"tensors"`
	Delta map[string][]float64 `json:"delta"`
}

// relErr is max|got−want| / max|want|, the error bound used against PyTorch.
func relErr(got []float32, want []float64) float64 {
	var diff, scale float64
	for i, w := range want {
		d := math.Abs(float64(got[i]) - w)
		if math.IsNaN(d) { // math.Max would carry it and "e > tol" pass
			return math.Inf(1)
		}
		diff = math.Max(diff, d)
		scale = math.Max(scale, math.Abs(w))
	}
	if scale == 0 {
		return diff
	}
	return diff / scale
}

// TestGoldenAdapter reads the adapter make_golden.py wrote and compares every value.
func TestGoldenAdapter(t *testing.T) {
	a, err := Read(filepath.Join(goldenDir, "adapter"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := hfconfig.Load(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(m); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(goldenDir, "values.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gv goldenValues
	if err := json.Unmarshal(raw, &gv); err != nil {
		t.Fatal(err)
	}
	c := a.Config
	if c.R != 4 || c.LoraAlpha != 8 || !c.UseRSLoRA || c.LoraDropout != 0.05 || !c.InferenceMode ||
		c.BaseModelNameOrPath != "hone-golden/tiny-llama" || a.DType != safetensors.BF16 || c.Scaling() != gv.Scaling {
		t.Errorf("config %+v dtype %s", c, a.DType)
	}
	seen := 0
	for _, layer := range a.Layers() {
		for mod, l := range a.Tensors[layer] {
			for which, vals := range map[string][]float32{"A": l.A, "B": l.B} {
				name := TensorName(layer, mod, which)
				want, ok := gv.Tensors[name]
				if !ok {
					t.Fatalf("%s not in values.json", name)
				}
				for i, w := range want.Values {
					if float64(vals[i]) != w {
						t.Fatalf("%s[%d] = %v, want %v (%s)", name, i, vals[i], w, rerun)
					}
				}
				seen++
			}
			dw, err := a.DeltaW(layer, mod)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(dw, gv.Delta[fmt.Sprintf("%d.%s", layer, mod)]); e > 1e-5 {
				t.Errorf("layer %d %s: ΔW relative error %g vs torch", layer, mod, e)
			}
		}
	}
	if seen != len(gv.Tensors) {
		t.Errorf("read %d tensors, values.json has %d", seen, len(gv.Tensors))
	}
}

type torchResult struct {
	Scaling float64 `json:"scaling"`
	Modules map[string]struct {
		Shape []int     `json:"shape"`
		Delta []float64 `json:"delta"`
	} `json:"modules"`
}

// TestPyTorchCheck writes adapters with Write and has check_adapter.py (torch) read
// them independently and compute ΔW. One python run checks every case, since
// importing torch dominates the test's time.
func TestPyTorchCheck(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		skipOrFail(t, "no /usr/bin/python3")
	}
	m := tinyConfig(t)
	type tc struct {
		name  string
		dtype safetensors.DType
		rs    bool
		r     int
		dir   string
		a     *Adapter
	}
	cases := []*tc{{name: "F32", dtype: safetensors.F32, r: 4}, {name: "BF16 rsLoRA", dtype: safetensors.BF16, rs: true, r: 3},
		{name: "F16", dtype: safetensors.F16, r: 1}}
	tmp := t.TempDir()
	args := []string{filepath.Join(goldenDir, "check_adapter.py")}
	for i, c := range cases {
		c.a = randomAdapter(t, m, c.r, 16, c.rs, uint64(10+i))
		c.a.DType = c.dtype
		c.dir = filepath.Join(tmp, fmt.Sprintf("adapter-%d", i))
		if err := Write(c.dir, c.a); err != nil {
			t.Fatal(err)
		}
		args = append(args, c.dir)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("/usr/bin/python3", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "No module named 'torch'") {
			skipOrFail(t, "torch is not importable")
		}
		t.Fatalf("check_adapter.py: %v\n%s", err, stderr.String())
	}
	var res map[string]torchResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := res[c.dir]
			if !ok {
				t.Fatalf("no result for %s", c.dir)
			}
			if got.Scaling != c.a.Config.Scaling() {
				t.Errorf("scaling: torch %v, Go %v", got.Scaling, c.a.Config.Scaling())
			}
			if len(got.Modules) != m.NumHiddenLayers*7 {
				t.Fatalf("torch saw %d modules", len(got.Modules))
			}
			// The file holds rounded values for f16/bf16: compare ΔW of what was read back.
			back, err := Read(c.dir)
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range got.Modules {
				var layer int
				var mod string
				if _, err := fmt.Sscanf(strings.Replace(key, ".", " ", 1), "%d %s", &layer, &mod); err != nil {
					t.Fatal(err)
				}
				dw, err := back.DeltaW(layer, mod)
				if err != nil {
					t.Fatal(err)
				}
				l := back.Tensors[layer][mod]
				if want.Shape[0] != l.Out || want.Shape[1] != l.In {
					t.Fatalf("%s: torch shape %v, Go [%d %d]", key, want.Shape, l.Out, l.In)
				}
				if e := relErr(dw, want.Delta); e > 1e-5 {
					t.Errorf("%s: ΔW relative error %g vs torch", key, e)
				}
			}
		})
	}
}

// TestReadModelGoldenAdapters reads the adapters train/model's reference.py wrote
// (another independent writer) together with their model configs.
func TestReadModelGoldenAdapters(t *testing.T) {
	root := "../../testdata/golden/model"
	cases, _ := filepath.Glob(filepath.Join(root, "*", "adapter"))
	if len(cases) == 0 {
		t.Skipf("no adapters under %s", root)
	}
	for _, dir := range cases {
		a, err := Read(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		m, err := hfconfig.Load(filepath.Join(filepath.Dir(dir), "model"))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if err := a.Check(m); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}
