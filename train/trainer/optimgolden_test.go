package trainer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// optimGolden is testdata/golden/optim/golden.json (make_golden.py there).
type optimGolden struct {
	NA      int                `json:"n_a"`
	NB      int                `json:"n_b"`
	MaxNorm float64            `json:"max_norm"`
	HParams map[string]float64 `json:"hparams"` // torch's names
	Param0  []float32          `json:"param0"`
	Steps   []struct {
		LR                         float64
		Norm                       float64
		Grad, Clipped, Param, M, V []float32
	} `json:"steps"`
}

func readOptimGolden(t *testing.T) optimGolden {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "golden", "optim")
	rerun := "regenerate with /usr/bin/python3 testdata/golden/optim/make_golden.py testdata/golden/optim"
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatalf("%v (%s)", err, rerun)
	}
	var prov struct {
		Files map[string]string `json:"files"`
	}
	pj, err := os.ReadFile(filepath.Join(dir, "provenance.json"))
	if err == nil {
		err = json.Unmarshal(pj, &prov)
	}
	if err != nil {
		t.Fatalf("provenance.json: %v (%s)", err, rerun)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != prov.Files["golden.json"] {
		t.Fatalf("golden.json does not match provenance.json's sha256: changed by hand (%s)", rerun)
	}
	var g optimGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("golden.json: %v", err)
	}
	return g
}

// TestUpdateMatchesTorch: AdamW.Update is torch.nn.utils.clip_grad_norm_
// then a torch.optim.AdamW step (golden values from make_golden.py): the
// norm it returns, the gradient as the clip leaves it, and the weights
// and moments after each of three steps. The second step's gradient has
// the norm max_norm exactly, which clip_grad_norm_ still scales, by
// max_norm/(norm + 1e-6) (it clamps that coefficient at 1 rather than
// comparing the norm with max_norm); Update left it unscaled.
func TestUpdateMatchesTorch(t *testing.T) {
	g := readOptimGolden(t)
	be, ad := tinyQAdapter(t)
	lr := ad.Layers[0][model.ModQ]
	if len(lr.A) != g.NA || len(lr.B) != g.NB {
		t.Fatalf("adapter A %d, B %d; golden A %d, B %d", len(lr.A), len(lr.B), g.NA, g.NB)
	}
	copy(lr.A, g.Param0[:g.NA])
	copy(lr.B, g.Param0[g.NA:])
	hp := g.HParams
	o := mustAdamW(t, ad, kernels.AdamWParams{Beta1: float32(hp["beta1"]), Beta2: float32(hp["beta2"]), Eps: float32(hp["eps"]), WeightDecay: float32(hp["weight_decay"])}, g.MaxNorm)
	join := func(a, b []float32) []float32 { return append(append([]float32(nil), a...), b...) }
	for k, st := range g.Steps {
		copy(lr.DA, st.Grad[:g.NA])
		copy(lr.DB, st.Grad[g.NA:])
		norm, err := o.Update(be, ad, st.LR)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(norm-st.Norm) > 1e-6*st.Norm {
			t.Errorf("step %d: norm %v, torch %v", k+1, norm, st.Norm)
		}
		// A few float32 roundings apart at most; scaling by
		// max_norm/(norm + 1e-6) or not differs by about 1e-6.
		closeTo(t, k+1, "clipped gradient", join(lr.DA, lr.DB), st.Clipped, 4e-7)
		closeTo(t, k+1, "weights", join(lr.A, lr.B), st.Param, 1e-5)
		closeTo(t, k+1, "exp_avg", join(o.m[0], o.m[1]), st.M, 1e-5)
		closeTo(t, k+1, "exp_avg_sq", join(o.v[0], o.v[1]), st.V, 1e-5)
	}
}

// closeTo reports the first entry of got that is not within rel of want:
// |got − want| ≤ rel·(|want| + rms(want)).
func closeTo(t *testing.T, step int, what string, got, want []float32, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("step %d: %s has %d values, torch %d", step, what, len(got), len(want))
	}
	rms := 0.0
	for _, w := range want {
		rms += float64(w) * float64(w)
	}
	rms = math.Sqrt(rms / float64(len(want)))
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > rel*(math.Abs(float64(want[i]))+rms) {
			t.Errorf("step %d: %s[%d] = %v, torch %v", step, what, i, got[i], want[i])
			return
		}
	}
}
