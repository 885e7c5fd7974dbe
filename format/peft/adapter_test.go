package peft

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
)

// tinyModel is a llama config with uneven projection sizes, so a transposed A or B
// cannot pass a shape check by accident.
const tinyModel = `{"model_type":"llama","vocab_size":64,"hidden_size":16,"intermediate_size":24,
"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2}`

func tinyConfig(t testing.TB) *hfconfig.Config {
	c, err := hfconfig.Parse([]byte(tinyModel))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randomAdapter builds an adapter for every module of every layer of m, with seeded
// normal A and B (B non-zero so ΔW is not trivially zero).
func randomAdapter(t testing.TB, m *hfconfig.Config, r int, alpha float64, rs bool, seed uint64) *Adapter {
	rng := rand.New(rand.NewPCG(seed, 99))
	a := &Adapter{Config: Config{R: r, LoraAlpha: alpha, UseRSLoRA: rs, TargetModules: Modules(),
		BaseModelNameOrPath: "tiny-llama", InferenceMode: true}}
	for layer := 0; layer < m.NumHiddenLayers; layer++ {
		for _, mod := range Modules() {
			in, out, err := m.LinearDims(mod)
			if err != nil {
				t.Fatal(err)
			}
			l := LoRA{A: make([]float32, r*in), B: make([]float32, out*r), R: r, In: in, Out: out}
			for i := range l.A {
				l.A[i] = float32(rng.NormFloat64() * 0.5)
			}
			for i := range l.B {
				l.B[i] = float32(rng.NormFloat64() * 0.5)
			}
			a.Set(layer, mod, l)
		}
	}
	return a
}

func TestRoundTripDTypes(t *testing.T) {
	m := tinyConfig(t)
	for _, d := range []safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16} {
		t.Run(string(d), func(t *testing.T) {
			a := randomAdapter(t, m, 4, 8, false, 1)
			a.DType = d
			dir := filepath.Join(t.TempDir(), "step-000001")
			if err := Write(dir, a); err != nil {
				t.Fatal(err)
			}
			b, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if b.DType != d {
				t.Errorf("dtype %s, want %s", b.DType, d)
			}
			if err := b.Check(m); err != nil {
				t.Error(err)
			}
			if fmt.Sprint(b.Config) != fmt.Sprint(withDefaults(a.Config)) {
				t.Errorf("config\n got %+v\nwant %+v", b.Config, withDefaults(a.Config))
			}
			for _, layer := range a.Layers() {
				for mod, want := range a.Tensors[layer] {
					got := b.Tensors[layer][mod]
					if got.R != want.R || got.In != want.In || got.Out != want.Out {
						t.Fatalf("layer %d %s: sizes %d/%d/%d", layer, mod, got.R, got.In, got.Out)
					}
					for _, p := range []struct{ g, w []float32 }{{got.A, want.A}, {got.B, want.B}} {
						for i := range p.w {
							w := p.w[i]
							switch d {
							case safetensors.F16:
								w = safetensors.F16ToF32(safetensors.F32ToF16(w))
							case safetensors.BF16:
								w = safetensors.BF16ToF32(safetensors.F32ToBF16(w))
							}
							if p.g[i] != w {
								t.Fatalf("layer %d %s [%d]: %g, want %g", layer, mod, i, p.g[i], w)
							}
						}
					}
				}
			}
		})
	}
}

func withDefaults(c Config) Config {
	c.PeftType, c.TaskType, c.Bias = "LORA", "CAUSAL_LM", "none"
	return c
}

func TestWrittenFileLayout(t *testing.T) {
	m := tinyConfig(t)
	a := randomAdapter(t, m, 2, 16, true, 2)
	dir := filepath.Join(t.TempDir(), "a")
	if err := Write(dir, a); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	var kv map[string]any
	if err := json.Unmarshal(raw, &kv); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 2.0, "lora_alpha": 16.0,
		"bias": "none", "use_rslora": true, "use_dora": false, "modules_to_save": nil, "fan_in_fan_out": false,
		"inference_mode": true, "base_model_name_or_path": "tiny-llama", "lora_dropout": 0.0}
	for k, v := range want {
		if got, ok := kv[k]; !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if fmt.Sprint(kv["target_modules"]) != "[q_proj k_proj v_proj o_proj gate_proj up_proj down_proj]" {
		t.Errorf("target_modules %v", kv["target_modules"])
	}
	f, err := safetensors.OpenFile(filepath.Join(dir, WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata()["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata())
	}
	info, ok := f.Info("base_model.model.model.layers.2.mlp.down_proj.lora_A.weight")
	if !ok || fmt.Sprint(info.Shape) != "[2 24]" {
		t.Errorf("down_proj A: %+v %v", info, ok)
	}
	info, ok = f.Info("base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight")
	if !ok || fmt.Sprint(info.Shape) != "[8 2]" {
		t.Errorf("k_proj B: %+v %v", info, ok)
	}
	if n := len(f.Names()); n != 3*7*2 {
		t.Errorf("%d tensors, want 42", n)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dir)); len(ents) != 1 {
		t.Errorf("left beside the adapter: %v", ents)
	}
	// An existing empty folder is replaced; a missing parent is created.
	empty := filepath.Join(t.TempDir(), "run", "step-000002")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(empty, a); err != nil {
		t.Fatalf("into empty folder: %v", err)
	}
	if err := Write(filepath.Join(t.TempDir(), "new-run", "step-000001"), a); err != nil {
		t.Fatalf("missing parent: %v", err)
	}
	// A second write to the same, now full, folder must refuse rather than mix files.
	if err := Write(dir, a); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("overwrite: %v", err)
	}
}

func TestScalingAndDeltaW(t *testing.T) {
	c := Config{R: 4, LoraAlpha: 8}
	if c.Scaling() != 2 {
		t.Errorf("alpha/r = %v", c.Scaling())
	}
	c.UseRSLoRA = true
	if c.Scaling() != 4 {
		t.Errorf("alpha/sqrt(r) = %v", c.Scaling())
	}
	// ΔW by hand for a 2×3 projection of rank 1: B=[1;2], A=[1 0 -1], scale 8/1.
	a := &Adapter{Config: Config{R: 1, LoraAlpha: 8, TargetModules: []string{"q_proj"}}}
	a.Set(0, "q_proj", LoRA{A: []float32{1, 0, -1}, B: []float32{1, 2}, R: 1, In: 3, Out: 2})
	dw, err := a.DeltaW(0, "q_proj")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dw) != "[8 0 -8 16 0 -16]" {
		t.Errorf("ΔW = %v", dw)
	}
	if _, err := a.DeltaW(1, "q_proj"); err == nil {
		t.Error("missing layer accepted")
	}
}

func TestCheckAgainstModel(t *testing.T) {
	m := tinyConfig(t)
	a := randomAdapter(t, m, 2, 4, false, 3)
	if err := a.Check(m); err != nil {
		t.Fatal(err)
	}
	bad := randomAdapter(t, m, 2, 4, false, 3)
	l := bad.Tensors[1]["k_proj"]
	l.Out = 16 // the q width, not the kv width
	l.B = make([]float32, 16*2)
	bad.Tensors[1]["k_proj"] = l
	if err := bad.Check(m); err == nil || !strings.Contains(err.Error(), "k_proj") {
		t.Errorf("wrong k_proj width: %v", err)
	}
	deep := randomAdapter(t, m, 2, 4, false, 3)
	deep.Set(3, "q_proj", deep.Tensors[0]["q_proj"])
	if err := deep.Check(m); err == nil || !strings.Contains(err.Error(), "layer 3") {
		t.Errorf("layer past the model: %v", err)
	}
}

func TestWriteRejects(t *testing.T) {
	m := tinyConfig(t)
	cases := map[string]func(a *Adapter){
		"dora":            func(a *Adapter) { a.Config.UseDoRA = true },
		"modules_to_save": func(a *Adapter) { a.Config.ModulesToSave = []string{"lm_head"} },
		"bias":            func(a *Adapter) { a.Config.Bias = "all" },
		"zero rank":       func(a *Adapter) { a.Config.R = 0 },
		"alpha":           func(a *Adapter) { a.Config.LoraAlpha = math.NaN() },
		"unknown module":  func(a *Adapter) { a.Config.TargetModules = append(a.Config.TargetModules, "lm_head") },
		"untargeted":      func(a *Adapter) { a.Config.TargetModules = []string{"q_proj"} },
		"short A": func(a *Adapter) {
			l := a.Tensors[0]["v_proj"]
			l.A = l.A[1:]
			a.Tensors[0]["v_proj"] = l
		},
		"rank mismatch": func(a *Adapter) { a.Config.R = 3 },
		"int dtype":     func(a *Adapter) { a.DType = safetensors.I32 },
		"task":          func(a *Adapter) { a.Config.TaskType = "SEQ_CLS" },
		"no tensors":    func(a *Adapter) { a.Tensors = nil },
	}
	for name, mutate := range cases {
		a := randomAdapter(t, m, 2, 4, false, 4)
		mutate(a)
		dir := filepath.Join(t.TempDir(), "out")
		if err := Write(dir, a); err == nil {
			t.Errorf("%s: written", name)
		}
		if ents, _ := os.ReadDir(filepath.Dir(dir)); len(ents) != 0 {
			t.Errorf("%s: left %v", name, ents)
		}
	}
}

// writeRaw writes an adapter folder from a config string and tensors, bypassing Write.
func writeRaw(t *testing.T, config string, ts []safetensors.Tensor) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if ts != nil {
		if err := safetensors.Write(filepath.Join(dir, WeightsName), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func f32(t *testing.T, name string, shape ...int) safetensors.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	x, err := safetensors.FromFloat32Tensor(name, safetensors.F32, shape, make([]float32, n))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestReadRejects(t *testing.T) {
	const good = `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":2,"lora_alpha":4,"target_modules":["q_proj"],"bias":"none"}`
	qa, qb := TensorName(0, "q_proj", "A"), TensorName(0, "q_proj", "B")
	pair := func() []safetensors.Tensor { return []safetensors.Tensor{f32(t, qa, 2, 16), f32(t, qb, 16, 2)} }
	cfg := func(repl string) string { return strings.Replace(good, `"bias":"none"`, repl, 1) }
	cases := map[string]struct {
		config string
		ts     []safetensors.Tensor
		want   string
	}{
		"dora":            {cfg(`"bias":"none","use_dora":true`), pair(), "DoRA"},
		"modules_to_save": {cfg(`"bias":"none","modules_to_save":["lm_head"]`), pair(), "modules_to_save"},
		"bias":            {cfg(`"bias":"lora_only"`), pair(), `bias "lora_only"`},
		"lora_bias":       {cfg(`"bias":"none","lora_bias":true`), pair(), "lora_bias"},
		"rank_pattern":    {cfg(`"bias":"none","rank_pattern":{"q_proj":4}`), pair(), "rank_pattern"},
		"fan_in_fan_out":  {cfg(`"bias":"none","fan_in_fan_out":true`), pair(), "fan_in_fan_out"},
		"regex targets":   {strings.Replace(good, `["q_proj"]`, `".*q_proj"`, 1), pair(), "regular expressions"},
		"unknown target":  {strings.Replace(good, `["q_proj"]`, `["q_proj","c_attn"]`, 1), pair(), `"c_attn"`},
		"no targets":      {strings.Replace(good, `"target_modules":["q_proj"],`, ``, 1), pair(), "target_modules is required"},
		"not lora":        {strings.Replace(good, `"LORA"`, `"IA3"`, 1), pair(), `"IA3"`},
		"no peft_type":    {strings.Replace(good, `"peft_type":"LORA",`, ``, 1), pair(), "peft_type"},
		"seq cls":         {strings.Replace(good, `CAUSAL_LM`, `SEQ_CLS`, 1), pair(), "task_type"},
		"no r":            {strings.Replace(good, `"r":2,`, ``, 1), pair(), "required"},
		"bad json":        {`{"r":`, pair(), "adapter config"},
		// PEFT reads the file as UTF-8 text and fails on such a byte; Go's
		// json would read it as U+FFFD, naming another base model.
		"not utf-8":         {strings.Replace(good, `"bias":"none"`, "\"bias\":\"none\",\"base_model_name_or_path\":\"Qwen/\xffQwen\"", 1), pair(), "not valid UTF-8 at byte"},
		"no weights":        {good, nil, "no such file"},
		"A only":            {good, []safetensors.Tensor{f32(t, qa, 2, 16)}, "without lora_B"},
		"rank differs":      {good, []safetensors.Tensor{f32(t, qa, 3, 16), f32(t, qb, 16, 3)}, "rank r = 2"},
		"B transposed":      {good, []safetensors.Tensor{f32(t, qa, 2, 16), f32(t, qb, 2, 16)}, "rank r = 2"},
		"3-d":               {good, []safetensors.Tensor{f32(t, qa, 2, 16, 1), f32(t, qb, 16, 2)}, "2 dimensions"},
		"adapter name kept": {good, []safetensors.Tensor{f32(t, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight", 2, 16)}, "unexpected tensor"},
		"untargeted tensor": {good, append(pair(), f32(t, TensorName(0, "v_proj", "A"), 2, 16), f32(t, TensorName(0, "v_proj", "B"), 4, 2)), "not in target_modules"},
		"wrong block":       {good, []safetensors.Tensor{f32(t, "base_model.model.model.layers.0.mlp.q_proj.lora_A.weight", 2, 16)}, "not a known mlp projection"},
		"magnitude":         {good, append(pair(), f32(t, "base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector", 16)), "unexpected tensor"},
		"int tensor": {good, []safetensors.Tensor{{Name: qa, DType: safetensors.I32, Shape: []int{2, 16}, Data: make([]byte, 128)},
			f32(t, qb, 16, 2)}, "dtype I32"},
		"empty file": {good, []safetensors.Tensor{}, "no LoRA tensors"},
		"mixed layer paths": {good, []safetensors.Tensor{f32(t, TensorNameAt(Gemma3LayersPath, 0, "q_proj", "A"), 2, 16), f32(t, qb, 16, 2)},
			"layers under model.layers, but others under model.language_model.layers"},
		// PEFT puts no LoRA on a layer outside layers_to_transform, so it
		// drops such a layer's tensors on load; applying them is another model.
		"outside layers_to_transform": {cfg(`"bias":"none","layers_to_transform":[1,2]`), pair(), "layers_to_transform"},
		"unknown layer path":          {good, []safetensors.Tensor{f32(t, "base_model.model.model.text_model.layers.0.self_attn.q_proj.lora_A.weight", 2, 16)}, "unexpected tensor"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := writeRaw(t, c.config, c.ts)
			_, err := Read(dir)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
	// The good config reads, and optional keys take PEFT's defaults.
	a, err := Read(writeRaw(t, good, pair()))
	if err != nil {
		t.Fatal(err)
	}
	if a.Config.Scaling() != 2 || a.Config.UseRSLoRA || a.Tensors[0]["q_proj"].Out != 16 {
		t.Errorf("%+v", a.Config)
	}
	// "all-linear" expands to the seven projections; layers_to_transform may be an int.
	a, err = Read(writeRaw(t, strings.Replace(good, `["q_proj"]`, `"all-linear","layers_to_transform":0,"unknown_key":{"x":1}`, 1), pair()))
	if err != nil || len(a.Config.TargetModules) != 7 || fmt.Sprint(a.Config.LayersToTransform) != "[0]" {
		t.Errorf("all-linear: %v %+v", err, a)
	}
}

func TestWriteWithExtra(t *testing.T) {
	m := tinyConfig(t)
	a := randomAdapter(t, m, 2, 4, false, 5)
	root := t.TempDir()
	dir := filepath.Join(root, "step-000003")
	err := WriteWith(dir, a, func(tmp string) error {
		if _, err := os.Stat(filepath.Join(tmp, WeightsName)); err != nil {
			return err // the adapter must already be there
		}
		return os.WriteFile(filepath.Join(tmp, "optimizer.safetensors"), []byte("state"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{ConfigName, WeightsName, "optimizer.safetensors"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Error(err)
		}
	}
	failed := filepath.Join(root, "step-000004")
	err = WriteWith(failed, a, func(string) error { return fmt.Errorf("disk full") })
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("extra error: %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("failed write left %v", ents)
	}
}

func TestFullPEFTConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "peft-full-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c.R != 16 || c.LoraAlpha != 32 || c.Scaling() != 2 || len(c.TargetModules) != 7 || c.LoraDropout != 0.05 ||
		c.BaseModelNameOrPath != "Qwen/Qwen2.5-0.5B-Instruct" || !c.InferenceMode {
		t.Errorf("%+v", c)
	}
	for _, repl := range []string{`"layer_replication": [[0, 2]]`, `"use_qalora": true`, `"trainable_token_indices": [5]`,
		`"target_parameters": ["mlp.experts"]`, `"exclude_modules": ["o_proj"]`,
		// LoRA variants whose forward is not B·A on every token.
		`"alora_invocation_tokens": [151644, 77091]`, `"arrow_config": {"top_k": 3}`,
		`"use_bdlora": {"target_modules_bd_a": ["q_proj"], "nblocks": 2}`, `"kasa_config": {"beta": 0.0001, "gamma": 0.001}`,
		// Initialisations PEFT runs again on load, rewriting the base weights.
		`"init_lora_weights": "pissa"`, `"init_lora_weights": "pissa_niter_16"`, `"init_lora_weights": "olora"`,
		`"init_lora_weights": "corda"`, `"init_lora_weights": "loftq"`, `"init_lora_weights": "lora_ga"`} {
		key := strings.SplitN(repl, ":", 2)[0]
		var kv map[string]json.RawMessage
		if err := json.Unmarshal(raw, &kv); err != nil {
			t.Fatal(err)
		}
		kv[strings.Trim(key, `"`)] = json.RawMessage(strings.SplitN(repl, ":", 2)[1])
		b, _ := json.Marshal(kv)
		if _, err := ParseConfig(b); err == nil || !strings.Contains(err.Error(), strings.Trim(key, `"`)) {
			t.Errorf("%s: %v", repl, err)
		}
	}
}

// Initialisations that leave the base weights alone, and the variants
// defaults as PEFT writes them, read as plain LoRA.
func TestPEFTConfigInitsThatKeepTheBase(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "peft-full-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{`"init_lora_weights": false`, `"init_lora_weights": "gaussian"`, `"init_lora_weights": "eva"`,
		`"init_lora_weights": "orthogonal"`, `"alora_invocation_tokens": null`, `"arrow_config": null`, `"use_bdlora": null`,
		`"kasa_config": null`} {
		b := strings.Replace(string(raw), "{", "{"+kv+",", 1)
		b = strings.Replace(b, `"init_lora_weights": true,`, ``, 1)
		if _, err := ParseConfig([]byte(b)); err != nil {
			t.Errorf("%s: %v", kv, err)
		}
	}
}

// Adapters of Gemma3ForConditionalGeneration keep their layers under the
// language model's path: Read records it, Write names the tensors by it.
func TestLayersPaths(t *testing.T) {
	m := tinyConfig(t)
	for _, path := range LayersPaths() {
		a := randomAdapter(t, m, 2, 4, false, 1)
		a.LayersPath = path
		dir := filepath.Join(t.TempDir(), "a")
		if err := Write(dir, a); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.OpenFile(filepath.Join(dir, WeightsName))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range f.Names() {
			if !strings.HasPrefix(n, "base_model.model."+path+".") {
				t.Errorf("%s: tensor %q", path, n)
			}
		}
		f.Close()
		b, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if b.LayersPath != path || !slices.Equal(b.Tensors[2]["down_proj"].B, a.Tensors[2]["down_proj"].B) {
			t.Errorf("%s: read back under %q", path, b.LayersPath)
		}
	}
	a := randomAdapter(t, m, 2, 4, false, 1)
	a.LayersPath = "model.vision_tower.layers"
	if err := Write(filepath.Join(t.TempDir(), "a"), a); err == nil || !strings.Contains(err.Error(), "model.vision_tower.layers") {
		t.Errorf("unknown layers path written: %v", err)
	}
}

// adapter_config.json's keys are PEFT's by their exact names: PEFT builds
// LoraConfig from the dict as written and drops a key it does not know, so
// "USE_RSLORA" is not use_rslora there (encoding/json, which matches struct
// fields case-insensitively, took it for use_rslora and scaled B·A by
// alpha/√r where PEFT scales by alpha/r).
func TestConfigKeysExact(t *testing.T) {
	const good = `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":4,"lora_alpha":8,"target_modules":["q_proj"]`
	for _, extra := range []string{`"USE_RSLORA":true`, `"Use_RSLoRA":true`, `"use_rslora":false,"Use_Rslora":true`} {
		c, err := ParseConfig([]byte(good + "," + extra + "}"))
		if err != nil {
			t.Fatalf("%s: %v", extra, err)
		}
		if c.UseRSLoRA || c.Scaling() != 2 {
			t.Errorf("%s: use_rslora %v, scaling %v; PEFT reads alpha/r = 2", extra, c.UseRSLoRA, c.Scaling())
		}
	}
	c, err := ParseConfig([]byte(good + `,"R":16,"LORA_ALPHA":1}`))
	if err != nil || c.R != 4 || c.LoraAlpha != 8 {
		t.Errorf("R and LORA_ALPHA beside r and lora_alpha: %+v, %v", c, err)
	}
	// The exact key is still read.
	if c, err := ParseConfig([]byte(good + `,"use_rslora":true}`)); err != nil || !c.UseRSLoRA {
		t.Errorf("use_rslora: %+v, %v", c, err)
	}
}

// TestReadHugeConfig: an adapter_config.json of a gigabyte (a weights file
// copied to the wrong name, a corrupt write) is refused by its size, not
// read whole into memory first.
func TestReadHugeConfig(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Read(dir)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), ConfigName) || !strings.Contains(err.Error(), "1073741824 bytes") {
		t.Fatalf("error %v does not name the file and its size", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<26 {
		t.Errorf("allocated %d bytes to refuse it", got)
	}
}

// TestWriteRefusesOverflow: a finite weight past the range of the storage
// dtype (65504 for F16) would be saved as an infinity, which PEFT and vLLM
// load and which turns every logit it touches into NaN; Write refuses it,
// naming the matrix and the element. Within range, F16 and BF16 write.
func TestWriteRefusesOverflow(t *testing.T) {
	m := tinyConfig(t)
	for _, dt := range []safetensors.DType{safetensors.F16, safetensors.BF16} {
		a := randomAdapter(t, m, 2, 4, false, 4)
		a.DType = dt
		if err := Write(filepath.Join(t.TempDir(), "ok"), a); err != nil {
			t.Fatalf("%s in range: %v", dt, err)
		}
		big := float32(70000)
		if dt == safetensors.BF16 {
			big = math.MaxFloat32
		}
		a.Tensors[1]["v_proj"].B[3] = -big
		dir := filepath.Join(t.TempDir(), "out")
		err := Write(dir, a)
		if err == nil || !strings.Contains(err.Error(), "layer 1 v_proj") || !strings.Contains(err.Error(), "lora_B") ||
			!strings.Contains(err.Error(), "element 3") || !strings.Contains(err.Error(), string(dt)) {
			t.Errorf("%s: error %v does not name the layer, module, matrix, element and dtype", dt, err)
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: left %s: %v", dt, dir, serr)
		}
	}
}
