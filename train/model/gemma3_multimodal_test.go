package model

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/safetensors"
)

// multimodalGemma3 writes the Gemma 3 golden case (a gemma3_text folder
// PyTorch wrote) as a Gemma3ForConditionalGeneration folder of the same
// weights, named by layout, with a vision tower Hone must leave aside.
func multimodalGemma3(t *testing.T, layout modelfolder.Layout) string {
	t.Helper()
	return modelfoldertest.Gemma3Multimodal(t, filepath.Join(goldenDir, "gemma3", "model"), layout)
}

// renameAdapter copies the adapter folder src to a new folder whose tensors
// put the layers under layers instead of model.layers.
func renameAdapter(t *testing.T, src, layers string) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, peft.ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, peft.ConfigName), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.OpenFile(filepath.Join(src, peft.WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []safetensors.Tensor
	for _, name := range f.Names() {
		info, _ := f.Info(name)
		b, err := f.Bytes(name)
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(name, "base_model.model.model.layers.")
		if !ok {
			t.Fatalf("golden adapter tensor %q", name)
		}
		ts = append(ts, safetensors.Tensor{Name: "base_model.model." + layers + "." + rest, DType: info.DType, Shape: info.Shape, Data: b})
	}
	if err := safetensors.Write(filepath.Join(dir, peft.WeightsName), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGemma3Multimodal: the golden Gemma 3 weights in either
// Gemma3ForConditionalGeneration layout load as the text model, giving the
// same logits as the gemma3_text folder (bit for bit) and PyTorch's; an
// adapter saved by PEFT for either transformers generation of that model
// loads onto it, and the adapters Hone saves for it name the layers as PEFT
// does with transformers 4.52 and later.
func TestGemma3Multimodal(t *testing.T) {
	ctx := context.Background()
	be := testBackends(t)[0]
	gc := loadGoldenCase(t, "gemma3", be)
	baseWant, err := gc.model.Logits(ctx, gc.batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	adaptedWant, err := gc.model.Logits(ctx, gc.batch, gc.ad)
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range modelfolder.Layouts(&hfconfig.Config{Wrapper: "gemma3"}) {
		t.Run(strings.TrimSuffix(layout.Model, "."), func(t *testing.T) {
			dir := multimodalGemma3(t, layout)
			f, err := modelfolder.Open(dir, modelfolder.Weights)
			if err != nil {
				t.Fatal(err)
			}
			notes := f.Notes()
			if len(notes) != 1 || !strings.Contains(notes[0], "4 tensors of its vision tower and projector") || !strings.Contains(notes[0], layout.Model) {
				t.Errorf("notes %q: want one saying the 4 vision tensors are not loaded", notes)
			}
			m, err := FromFolder(f, be, DTypeFloat32)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			c.LayersPath = ""
			if c != gc.model.Config || m.Config.LayersPath != peft.Gemma3LayersPath {
				t.Fatalf("config\n%+v\nwant the text folder's\n%+v\nwith layers path %s", m.Config, gc.model.Config, peft.Gemma3LayersPath)
			}
			base, err := m.Logits(ctx, gc.batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(base, baseWant) {
				t.Error("base logits differ from the gemma3_text folder's")
			}
			compare(t, "base logits", base, flat2(gc.want.BaseLogits), 1e-4)

			for _, layers := range []string{peft.Gemma3LayersPath, peft.Gemma3LegacyLayersPath, peft.LayersPath} {
				ad, err := ReadAdapter(renameAdapter(t, filepath.Join(goldenDir, "gemma3", "adapter"), layers), &m.Config)
				if err != nil {
					t.Fatalf("adapter with layers under %s: %v", layers, err)
				}
				if err := ad.Place(m.Backend()); err != nil {
					t.Fatal(err)
				}
				got, err := m.Logits(ctx, gc.batch, ad)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, adaptedWant) {
					t.Errorf("adapter with layers under %s: logits differ from the gemma3_text folder's", layers)
				}
				compare(t, "logits ("+layers+")", got, flat2(gc.want.Logits), 1e-4)
			}

			out := filepath.Join(t.TempDir(), "saved")
			ad, err := NewAdapter(&m.Config, AdapterConfig{Rank: 2, Alpha: 4, Targets: []Module{ModQ, ModDown}}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteAdapter(out, ad, dir); err != nil {
				t.Fatal(err)
			}
			sf, err := safetensors.OpenFile(filepath.Join(out, peft.WeightsName))
			if err != nil {
				t.Fatal(err)
			}
			defer sf.Close()
			names := sf.Names()
			if len(names) != 2*2*m.Config.Layers {
				t.Errorf("saved %d tensors", len(names))
			}
			for _, n := range names {
				if !strings.HasPrefix(n, "base_model.model.model.language_model.layers.") {
					t.Errorf("saved adapter tensor %q is not under base_model.model.model.language_model.layers", n)
				}
			}
		})
	}
}

// A multimodal checkpoint still has to explain every tensor outside its
// vision side, and to hold the text model's, named by its layout.
func TestGemma3MultimodalRejects(t *testing.T) {
	layout := modelfolder.Layouts(&hfconfig.Config{Wrapper: "gemma3"})[0]
	dir := multimodalGemma3(t, layout)
	set, err := safetensors.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keep, drop []safetensors.Tensor
	for _, n := range set.Names() {
		info, _ := set.Info(n)
		b, _ := set.Bytes(n)
		x := safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)}
		if n == "language_model.model.layers.1.mlp.up_proj.weight" {
			drop = append(drop, x)
			continue
		}
		keep = append(keep, x)
	}
	set.Close()
	if len(drop) != 1 {
		t.Fatalf("no up_proj of layer 1 among %v", set.Names())
	}
	stray, _ := safetensors.FromFloat32Tensor("language_model.model.stray.weight", safetensors.F32, []int{2}, []float32{1, 2})
	for name, c := range map[string]struct {
		ts   []safetensors.Tensor
		want string
	}{
		"missing": {keep, `no tensor "language_model.model.layers.1.mlp.up_proj.weight", which a gemma3 (text model gemma3_text) config`},
		"stray":   {append(append(slices.Clone(keep), drop...), stray), "language_model.model.stray.weight"},
	} {
		if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), c.ts, nil); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir, testBackends(t)[0])
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}
