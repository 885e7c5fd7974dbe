package modelfolder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
)

const tiny = `{"model_type":%q,"vocab_size":32,"hidden_size":8,"intermediate_size":12,"num_hidden_layers":2,
"num_attention_heads":4,"num_key_value_heads":2,"head_dim":%d,"tie_word_embeddings":%v,"attention_bias":%v}`

// makeFolder writes config.json and bf16 zero weights for spec, minus drop, plus
// extra; sharded splits the weights into several files with an index.
func makeFolder(t *testing.T, cfgJSON string, drop string, extra []safetensors.Tensor, sharded bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, hfconfig.ConfigName), []byte(cfgJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := hfconfig.Parse([]byte(cfgJSON))
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, s := range Expected(c) {
		if s.Name == drop || s.Optional {
			continue
		}
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		x, err := safetensors.FromFloat32Tensor(s.Name, safetensors.BF16, s.Shape, make([]float32, n))
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, x)
	}
	ts = append(ts, extra...)
	if sharded {
		err = safetensors.WriteSharded(dir, ts, 600, nil)
	} else {
		err = safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFamilies(t *testing.T) {
	cases := []struct {
		typ      string
		headDim  int
		tie      bool
		bias     bool
		want     []string // names that must be expected
		notWant  []string
		nTensors int
	}{
		{"llama", 2, false, false, []string{"lm_head.weight", "model.layers.1.mlp.down_proj.weight"},
			[]string{"model.layers.0.self_attn.q_proj.bias", "model.layers.0.self_attn.q_norm.weight"}, 1 + 2*9 + 2},
		{"llama", 2, true, true, []string{"model.layers.0.self_attn.o_proj.bias", "model.layers.0.self_attn.k_proj.bias"}, nil, 1 + 2*13 + 1},
		{"qwen2", 2, true, false, []string{"model.layers.0.self_attn.q_proj.bias", "model.layers.1.self_attn.v_proj.bias"},
			[]string{"model.layers.0.self_attn.o_proj.bias"}, 1 + 2*12 + 1},
		{"qwen3", 6, false, false, []string{"model.layers.0.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight"},
			[]string{"model.layers.0.self_attn.q_proj.bias"}, 1 + 2*11 + 2},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s,tie=%v,bias=%v", c.typ, c.tie, c.bias)
		t.Run(name, func(t *testing.T) {
			js := fmt.Sprintf(tiny, c.typ, c.headDim, c.tie, c.bias)
			for _, sharded := range []bool{false, true} {
				dir := makeFolder(t, js, "", nil, sharded)
				f, err := Open(dir, Weights)
				if err != nil {
					t.Fatalf("sharded=%v: %v", sharded, err)
				}
				if got := len(f.Weights.Names()); got != c.nTensors {
					t.Errorf("sharded=%v: %d tensors, want %d", sharded, got, c.nTensors)
				}
				f.Close()
			}
			cfg, _ := hfconfig.Parse([]byte(js))
			names := map[string][]int{}
			for _, s := range Expected(cfg) {
				names[s.Name] = s.Shape
			}
			for _, n := range c.want {
				if _, ok := names[n]; !ok {
					t.Errorf("%s not expected", n)
				}
			}
			for _, n := range c.notWant {
				if _, ok := names[n]; ok {
					t.Errorf("%s expected", n)
				}
			}
			if fmt.Sprint(names["model.layers.0.self_attn.q_proj.weight"]) != fmt.Sprint([]int{4 * c.headDim, 8}) {
				t.Errorf("q_proj shape %v", names["model.layers.0.self_attn.q_proj.weight"])
			}
			if fmt.Sprint(names["model.layers.0.self_attn.o_proj.weight"]) != fmt.Sprint([]int{8, 4 * c.headDim}) {
				t.Errorf("o_proj shape %v", names["model.layers.0.self_attn.o_proj.weight"])
			}
		})
	}
}

func TestRejects(t *testing.T) {
	js := fmt.Sprintf(tiny, "qwen2", 2, true, false)
	wrong, _ := safetensors.FromFloat32Tensor("model.norm.weight", safetensors.F32, []int{9}, make([]float32, 9))
	stray, _ := safetensors.FromFloat32Tensor("model.layers.0.self_attn.o_proj.bias", safetensors.F32, []int{8}, make([]float32, 8))
	inv, _ := safetensors.FromFloat32Tensor("model.layers.0.self_attn.rotary_emb.inv_freq", safetensors.F32, []int{1}, make([]float32, 1))
	ints := safetensors.Tensor{Name: "model.norm.weight", DType: safetensors.I8, Shape: []int{8}, Data: make([]byte, 8)}
	cases := map[string]struct {
		drop  string
		extra []safetensors.Tensor
		want  string
	}{
		"missing bias":  {"model.layers.1.self_attn.k_proj.bias", nil, `no tensor "model.layers.1.self_attn.k_proj.bias"`},
		"wrong shape":   {"model.norm.weight", []safetensors.Tensor{wrong}, "shape [9]"},
		"unexplained":   {"", []safetensors.Tensor{stray}, "o_proj.bias"},
		"int weights":   {"model.norm.weight", []safetensors.Tensor{ints}, "dtype I8"},
		"inv_freq okay": {"", []safetensors.Tensor{inv}, ""},
	}
	for name, c := range cases {
		dir := makeFolder(t, js, c.drop, c.extra, false)
		f, err := Open(dir, Weights)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			} else {
				f.Close()
			}
			continue
		}
		if err == nil {
			f.Close()
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %q should mention %q and the folder", name, err, c.want)
		}
	}
	// In a sharded checkpoint the error names the shard that holds the tensor.
	for name, c := range map[string]struct {
		drop   string
		extra  []safetensors.Tensor
		tensor string
	}{
		"wrong shape": {"model.norm.weight", []safetensors.Tensor{wrong}, "model.norm.weight"},
		"int weights": {"model.norm.weight", []safetensors.Tensor{ints}, "model.norm.weight"},
		"unexplained": {"", []safetensors.Tensor{stray}, "model.layers.0.self_attn.o_proj.bias"},
	} {
		dir := makeFolder(t, js, c.drop, c.extra, true)
		raw, err := os.ReadFile(filepath.Join(dir, safetensors.IndexName))
		if err != nil {
			t.Fatal(err)
		}
		var idx safetensors.Index
		if err := json.Unmarshal(raw, &idx); err != nil {
			t.Fatal(err)
		}
		shard := idx.WeightMap[c.tensor]
		if f, err := Open(dir, Weights); err == nil {
			f.Close()
			t.Errorf("sharded %s: accepted", name)
		} else if shard == "" || !strings.Contains(err.Error(), shard) {
			t.Errorf("sharded %s: error %q does not name the shard %q that holds %s", name, err, shard, c.tensor)
		}
	}
	if _, err := Open(t.TempDir(), Weights); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("empty folder: %v", err)
	}
}

// TestModelGoldenFolders opens the model folders train/model's PyTorch reference
// script wrote (an independent writer of config.json and safetensors).
func TestModelGoldenFolders(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/golden/model/*/model")
	if len(dirs) == 0 {
		t.Skip("no model folders under testdata/golden/model")
	}
	for _, d := range dirs {
		f, err := Open(d, Weights)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		f.Close()
	}
}

func TestNotesNameUnknownFields(t *testing.T) {
	known := fmt.Sprintf(tiny, "qwen2", 2, true, false)
	f, err := Open(makeFolder(t, known, "", nil, false), Config)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Notes(); n != nil {
		t.Errorf("notes for a config of known keys: %q", n)
	}
	unknown := strings.Replace(known, `"vocab_size"`, `"my_tool_version":"1.2","vocab_size"`, 1)
	dir := makeFolder(t, unknown, "", nil, false)
	f, err = Open(dir, Config)
	if err != nil {
		t.Fatal(err)
	}
	n := f.Notes()
	if len(n) != 1 || !strings.Contains(n[0], dir) || !strings.Contains(n[0], "config.json") || !strings.Contains(n[0], "my_tool_version") {
		t.Errorf("notes %q, want one line naming the folder, config.json and my_tool_version", n)
	}
}
