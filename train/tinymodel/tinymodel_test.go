package tinymodel

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// A written folder loads back (through format/hfconfig and format/safetensors)
// as the same config and the same weights, rounded to the dtype on disk.
func TestWriteLoadsBackEqual(t *testing.T) {
	ctx := context.Background()
	be := ref.New()
	cases := []Options{
		{Family: "llama", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 1},
		{Family: "qwen2", Hidden: 28, Layers: 1, Heads: 7, KVHeads: 1, Tie: true, Vocab: 301, DType: "BF16", Seed: 2},
		{Family: "qwen3", Hidden: 24, Layers: 3, Heads: 2, KVHeads: 1, HeadDim: 16, DType: "F16", Seed: 3},
		{Family: "gemma3_text", Hidden: 24, Layers: 3, Heads: 2, KVHeads: 1, HeadDim: 16, Tie: true, DType: "BF16", SlidingWindow: 5, Seed: 4},
		{Family: "mistral", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 5},
	}
	for _, o := range cases {
		t.Run(o.Family, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if err := Write(ctx, dir, o, be); err != nil {
				t.Fatal(err)
			}
			want, err := New(o, be)
			if err != nil {
				t.Fatal(err)
			}
			got, err := model.Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			if got.Config != want.Config {
				t.Fatalf("config loads back as\n%+v\nwant\n%+v", got.Config, want.Config)
			}
			gt, wt := got.Tensors(), want.Tensors()
			if len(gt) != len(wt) {
				t.Fatalf("%d tensors loaded, %d written", len(gt), len(wt))
			}
			dt := o.Defaults().DType
			for i := range wt {
				if gt[i].Name != wt[i].Name || !slices.Equal(gt[i].Shape, wt[i].Shape) {
					t.Fatalf("tensor %d: %s %v, want %s %v", i, gt[i].Name, gt[i].Shape, wt[i].Name, wt[i].Shape)
				}
				for j, v := range wt[i].Values {
					r := v
					switch dt {
					case "BF16":
						r = safetensors.BF16ToF32(safetensors.F32ToBF16(v))
					case "F16":
						r = safetensors.F16ToF32(safetensors.F32ToF16(v))
					}
					if gt[i].Values[j] != r {
						t.Fatalf("%s[%d] = %v, wrote %v (%s of %v)", wt[i].Name, j, gt[i].Values[j], r, dt, v)
					}
				}
			}
			if o.Tie {
				if _, err := os.Stat(dir); err != nil {
					t.Fatal(err)
				}
				set, err := safetensors.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				if set.Has("lm_head.weight") {
					t.Error("tied model wrote an lm_head.weight")
				}
				set.Close()
			}
		})
	}
}

// Every family init-model accepts names its transformers class in
// config.json's architectures, which vLLM picks the model class by (it
// refuses an empty name as an unsupported architecture); --family mistral
// wrote [""].
func TestArchitectures(t *testing.T) {
	want := map[string]string{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
		"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "gemma3_text": "Gemma3ForCausalLM"}
	for family, arch := range want {
		dir := filepath.Join(t.TempDir(), "m")
		o := Options{Family: family, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1}
		if err := Write(context.Background(), dir, o, ref.New()); err != nil {
			t.Fatalf("%s: %v", family, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Architectures []string `json:"architectures"`
			ModelType     string   `json:"model_type"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Architectures, []string{arch}) || cfg.ModelType != family {
			t.Errorf("%s: config.json has architectures %q, model_type %q; want [%q], %q", family, cfg.Architectures, cfg.ModelType, arch, family)
		}
	}
}

// Same seed, same bytes; another seed, other weights.
func TestDeterministic(t *testing.T) {
	ctx := context.Background()
	be := ref.New()
	read := func(seed uint64) []byte {
		dir := filepath.Join(t.TempDir(), "m")
		if err := Write(ctx, dir, Options{Family: "qwen3", Hidden: 16, Heads: 2, Layers: 1, Seed: seed}, be); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := read(7), read(7), read(8)
	if !bytes.Equal(a, b) {
		t.Error("same seed wrote different weights")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds wrote the same weights")
	}
}

// The tokenizer is byte-level: every byte is its own token, the specials are
// single tokens, and decoding gives the text back; the chat template renders ChatML.
func TestTokenizerAndTemplate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := Write(context.Background(), dir, Options{Family: "llama", Hidden: 16, Heads: 2, Layers: 1}, ref.New()); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	text := "héllo, wörld\n\t<|im_start|>x<|im_end|><|endoftext|>\x00~"
	ids := tok.Encode(text, false)
	var want []int
	for _, b := range []byte("héllo, wörld\n\t") {
		want = append(want, int(b))
	}
	want = append(want, 257, 'x', 258, 256, 0, '~')
	if !slices.Equal(ids, want) {
		t.Errorf("Encode = %v\nwant     %v", ids, want)
	}
	if got := tok.Decode(ids, false); got != text {
		t.Errorf("Decode = %q, want %q", got, text)
	}
	tmpl, err := chattemplate.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Render(t.Context(), chattemplate.Input{
		Messages:            []chatmsg.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}},
		AddGenerationPrompt: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if wantT := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"; out != wantT {
		t.Errorf("template renders %q, want %q", out, wantT)
	}
}

func TestWriteRefuses(t *testing.T) {
	ctx := context.Background()
	be := ref.New()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, dir, Options{}, be); err == nil {
		t.Error("wrote into a non-empty folder")
	}
	for name, o := range map[string]Options{
		"small vocab": {Vocab: 100},
		"bad family":  {Family: "gpt2"},
		"bad heads":   {Heads: 3, KVHeads: 2},
		"bad dtype":   {DType: "F64"},
		"window":      {Family: "qwen3", SlidingWindow: 8},
		"positions":   {MaxPositions: -1},
	} {
		if err := Write(ctx, filepath.Join(t.TempDir(), "m"), o, be); err == nil {
			t.Errorf("%s: Write accepted %+v", name, o)
		}
	}
}

// TestMaxPositions: MaxPositions (init-model --max-positions) is the
// context the folder states, in config.json and in the tokenizer's
// model_max_length, as transformers and hone-serve read them; 0 is 4096.
func TestMaxPositions(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ set, want int }{{0, DefaultMaxPositions}, {16384, 16384}} {
		dir := filepath.Join(t.TempDir(), "m")
		if err := Write(ctx, dir, Options{MaxPositions: c.set}, ref.New()); err != nil {
			t.Fatal(err)
		}
		h, err := hfconfig.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if h.MaxPositionEmbeddings != c.want {
			t.Errorf("MaxPositions %d: max_position_embeddings %d, want %d", c.set, h.MaxPositionEmbeddings, c.want)
		}
		b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var tc struct {
			ModelMaxLength int `json:"model_max_length"`
		}
		if err := json.Unmarshal(b, &tc); err != nil || tc.ModelMaxLength != c.want {
			t.Errorf("MaxPositions %d: model_max_length %d (%v), want %d", c.set, tc.ModelMaxLength, err, c.want)
		}
	}
}
