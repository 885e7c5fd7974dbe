package hfconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSampleConfigsKnown checks every key of the real-shaped config.json
// samples in testdata (Llama 3.2, Qwen2.5, Qwen3, Gemma 3) against its
// family's table: a key the table does not list would be left unread
// without a word, so it fails here until it is added as honoured, refused
// or knowingly ignored.
func TestSampleConfigsKnown(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*", ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]bool{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(data, &keys); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var typ string
		if err := json.Unmarshal(keys["model_type"], &typ); err != nil {
			t.Fatalf("%s: model_type: %v", path, err)
		}
		families[typ] = true
		table := Fields(typ)
		if table == nil {
			t.Errorf("%s: no field table for model_type %q", path, typ)
			continue
		}
		for k := range keys {
			if _, ok := table[k]; !ok {
				t.Errorf("%s: key %q is in no %s field table (add it to Fields as honoured, refused or ignored)", path, k, typ)
			}
		}
		if tc, ok := keys["text_config"]; ok {
			var text map[string]json.RawMessage
			if err := json.Unmarshal(tc, &text); err != nil {
				t.Fatalf("%s: text_config: %v", path, err)
			}
			for k := range text {
				if _, ok := Fields("gemma3_text")[k]; !ok {
					t.Errorf("%s: text_config key %q is in no gemma3_text field table", path, k)
				}
			}
		}
		c, err := Parse(data)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(c.UnknownFields) > 0 {
			t.Errorf("%s: unknown fields %v", path, c.UnknownFields)
		}
	}
	for _, typ := range append(SupportedModelTypes(), "gemma3") {
		if !families[typ] {
			t.Errorf("no config.json sample of %s in testdata", typ)
		}
	}
}

func TestUnknownFieldsRecorded(t *testing.T) {
	c, err := parseWith(`,"zeta_knob":1,"alpha_knob":null,"use_sliding_window":true`)
	if err != nil {
		t.Fatal(err)
	}
	// LlamaConfig has no sliding window: the key is unknown to the family.
	if want := []string{"alpha_knob", "use_sliding_window", "zeta_knob"}; !slices.Equal(c.UnknownFields, want) {
		t.Errorf("unknown fields %v, want %v", c.UnknownFields, want)
	}
	if c.SlidingWindow != 0 {
		t.Errorf("llama sliding window %d, want 0", c.SlidingWindow)
	}
}

// refusedValues gives, for every Refused key of any table, a value that the
// key's check must refuse.
var refusedValues = map[string]string{
	"attention_dropout":           "0.1",
	"quantization_config":         `{"quant_method":"bitsandbytes","load_in_4bit":true}`,
	"is_encoder_decoder":          "true",
	"add_cross_attention":         "true",
	"pruned_heads":                `{"0":[1]}`,
	"final_logit_softcapping":     "30.0",
	"attn_logit_softcapping":      "50.0",
	"use_bidirectional_attention": "true",
	"partial_rotary_factor":       "0.5",
}

// familyBase returns a minimal valid config of model_type typ with extra
// keys appended.
func familyBase(typ, extra string) string {
	return strings.Replace(fmt.Sprintf(base, extra), `"llama"`, `"`+typ+`"`, 1)
}

func TestRefusedFields(t *testing.T) {
	for _, typ := range SupportedModelTypes() {
		for k, f := range Fields(typ) {
			if f.Use != Refused {
				continue
			}
			bad, ok := refusedValues[k]
			if !ok {
				t.Errorf("%s: refused key %q has no value in refusedValues to test", typ, k)
				continue
			}
			_, err := Parse([]byte(familyBase(typ, `,"`+k+`":`+bad)))
			if err == nil || !strings.Contains(err.Error(), k+" "+bad+" is not supported") {
				t.Errorf("%s: %s %s: error %v, want one naming the key and the value", typ, k, bad, err)
			}
			// The implemented value, and null, are accepted.
			for _, good := range []string{"null"} {
				if _, err := Parse([]byte(familyBase(typ, `,"`+k+`":`+good))); err != nil {
					t.Errorf("%s: %s %s: %v", typ, k, good, err)
				}
			}
		}
		for _, f := range Fields(typ) {
			if f.Note == "" || f.Use == 0 {
				t.Errorf("%s: a field without a use or a note: %+v", typ, f)
			}
		}
	}
	for _, ok := range []string{`,"attention_dropout":0.0`, `,"attention_dropout":0`, `,"is_encoder_decoder":false`, `,"pruned_heads":{}`} {
		if _, err := parseWith(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestQwenSlidingWindow(t *testing.T) {
	for _, typ := range []string{"qwen2", "qwen3"} {
		// No layer at or past max_window_layers: nothing slides, as in
		// transformers; the window is recorded.
		c, err := Parse([]byte(familyBase(typ, `,"use_sliding_window":true,"sliding_window":4096,"max_window_layers":2`)))
		if err != nil || c.SlidingWindow != 4096 || c.MaxWindowLayers != 2 {
			t.Errorf("%s: window past the last layer: %v %+v", typ, err, c)
		}
		// Off: the window is not recorded (Qwen2.5's files write 32768 beside false).
		c, err = Parse([]byte(familyBase(typ, `,"use_sliding_window":false,"sliding_window":32768,"max_window_layers":0`)))
		if err != nil || c.SlidingWindow != 0 {
			t.Errorf("%s: window off: %v %+v", typ, err, c)
		}
		for extra, want := range map[string]string{
			`,"use_sliding_window":true,"sliding_window":4096,"max_window_layers":1`: "max_window_layers 1 makes layers 1..1 attend through a window of 4096",
			`,"use_sliding_window":true,"sliding_window":4096`:                       "max_window_layers 28 makes layers",
			`,"layer_types":["full_attention","sliding_attention"]`:                  `layer_types[1] "sliding_attention" is not supported for ` + typ,
			`,"layer_types":["full_attention"]`:                                      "layer_types has 1 entries",
		} {
			cfg := familyBase(typ, extra)
			if !strings.Contains(extra, "max_window_layers") {
				cfg = strings.Replace(cfg, `"num_hidden_layers":2`, `"num_hidden_layers":30`, 1)
				if strings.Contains(extra, "layer_types") {
					cfg = familyBase(typ, extra)
				}
			}
			_, err := Parse([]byte(cfg))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s %s: error %v, want one containing %q", typ, extra, err, want)
			}
		}
		c, err = Parse([]byte(familyBase(typ, `,"layer_types":["full_attention","full_attention"]`)))
		if err != nil || len(c.UnknownFields) > 0 {
			t.Errorf("%s: full layer_types: %v %+v", typ, err, c)
		}
	}
}

func TestLoadRefusalNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte(familyBase("qwen2", `,"attention_dropout":0.1`)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ConfigName)) || !strings.Contains(err.Error(), "attention_dropout 0.1") {
		t.Errorf("error %v, want one naming %s and attention_dropout 0.1", err, ConfigName)
	}
}

// TestGemma3Multimodal reads gemma-3-4b-it's config.json as its text model:
// text_config with Gemma3TextConfig's defaults for what it leaves out, the
// top level's eos ids.
func TestGemma3Multimodal(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "gemma-3-4b-it"))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(c.ModelType, c.Wrapper, c.Architectures, c.VocabSize, c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers,
		c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.RoPE, c.LocalRoPETheta, c.SlidingWindow, c.QueryPreAttnScalar,
		c.TieWordEmbeddings, c.EOSTokenIDs, *c.BOSTokenID, c.DType, c.LayerTypes[5], c.LayerTypes[6], len(c.UnknownFields))
	want := fmt.Sprint("gemma3_text", "gemma3", []string{"Gemma3ForConditionalGeneration"}, 262208, 2560, 10240, 34,
		8, 4, 256, RoPE{Type: "linear", Theta: 1e6, Factor: 8}, 10000.0, 1024, 256.0,
		true, []int{1, 106}, 2, "bfloat16", "full_attention", "sliding_attention", 0)
	if got != want {
		t.Errorf("gemma-3-4b-it:\n got %s\nwant %s", got, want)
	}
	// Keys outside the tables are named with their place.
	u, err := Parse([]byte(`{"model_type":"gemma3","new_top":1,"text_config":{"new_inner":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"new_top", "text_config.new_inner"}; !slices.Equal(u.UnknownFields, want) {
		t.Errorf("unknown fields %v, want %v", u.UnknownFields, want)
	}
	// A top-level tie_word_embeddings must agree with the text model's.
	if _, err := Parse([]byte(`{"model_type":"gemma3","tie_word_embeddings":false,"text_config":{}}`)); err == nil ||
		!strings.Contains(err.Error(), "tie_word_embeddings false disagrees with text_config's true") {
		t.Errorf("disagreeing tie_word_embeddings: %v", err)
	}
	if _, err := Parse([]byte(`{"model_type":"gemma3","tie_word_embeddings":true,"text_config":{}}`)); err != nil {
		t.Errorf("agreeing tie_word_embeddings: %v", err)
	}
	// The top level's ids win over text_config's.
	ids, err := Parse([]byte(`{"model_type":"gemma3","eos_token_id":7,"text_config":{"eos_token_id":[1,2],"pad_token_id":3}}`))
	if err != nil || fmt.Sprint(ids.EOSTokenIDs, *ids.PadTokenID) != "[7] 3" {
		t.Errorf("token ids: %v %v", err, ids)
	}
}

// config.json's keys are transformers' by their exact names: a key that
// differs from one only in case is an attribute of its own there, which
// the model never reads, and it is listed as unknown here. encoding/json
// matched struct fields case-insensitively and used it, so the model had
// another RoPE base and other KV heads than transformers builds, while
// the folder's notes called the keys "not read".
func TestConfigKeysExact(t *testing.T) {
	c, err := parseWith(`,"Rope_Theta":1000000,"NUM_KEY_VALUE_HEADS":2,"rope_scaling":{"rope_type":"default","ROPE_TYPE":"linear","factor":2}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.RoPE != (RoPE{Type: "default", Theta: 10000}) || c.NumKeyValueHeads != 4 {
		t.Errorf("RoPE %+v, %d KV heads; transformers builds default RoPE, theta 10000, and 4 KV heads", c.RoPE, c.NumKeyValueHeads)
	}
	if want := []string{"NUM_KEY_VALUE_HEADS", "Rope_Theta"}; !slices.Equal(c.UnknownFields, want) {
		t.Errorf("unknown fields %v, want %v", c.UnknownFields, want)
	}
	g, err := ParseGenerationConfig([]byte(`{"eos_token_id":2,"EOS_TOKEN_ID":[7,8]}`))
	if err != nil || !slices.Equal(g.EOSTokenIDs, []int{2}) {
		t.Errorf("generation config: eos %v, %v; want [2]", g, err)
	}
}

// TestMaxModelLen: the model's context is max_position_embeddings, times
// the factor of a linear or dynamic rope_scaling, as vLLM derives
// max_model_len; llama3's max_position_embeddings already counts its
// scaling.
func TestMaxModelLen(t *testing.T) {
	for _, c := range []struct {
		rope RoPE
		want int
	}{
		{RoPE{Type: "default"}, 4096},
		{RoPE{Type: "linear", Factor: 2}, 8192},
		{RoPE{Type: "dynamic", Factor: 4}, 16384},
		{RoPE{Type: "linear", Factor: 1}, 4096},
		{RoPE{Type: "llama3", Factor: 8, OriginalMaxPositionEmbeddings: 512}, 4096},
	} {
		if got := (&Config{MaxPositionEmbeddings: 4096, RoPE: c.rope}).MaxModelLen(); got != c.want {
			t.Errorf("%+v: context %d, want %d", c.rope, got, c.want)
		}
	}
}

// TestMaxModelLenGemma3: Gemma 3's max_position_embeddings already counts
// its linear rope factor (131072 with factor 8 in the 4B to 27B configs),
// and vLLM leaves the factor out for it; multiplying held the model to
// 1048576 positions, eight times those it was trained on. Checked on the
// testdata config (512, linear factor 2) as loaded, both as gemma3_text and
// under a gemma3 wrapper's text_config.
func TestMaxModelLenGemma3(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "golden", "model", "gemma3", "model")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.RoPE.Type != "linear" || c.RoPE.Factor != 2 || c.MaxPositionEmbeddings != 512 {
		t.Fatalf("testdata changed: rope %+v, max_position_embeddings %d", c.RoPE, c.MaxPositionEmbeddings)
	}
	if got := c.MaxModelLen(); got != 512 {
		t.Errorf("gemma3_text: context %d, want 512 (vLLM's max_model_len)", got)
	}
	text, err := os.ReadFile(filepath.Join(dir, ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	wrapped := `{"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"], "text_config": ` + string(text) + `}`
	w, err := Parse([]byte(wrapped))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.MaxModelLen(); got != 512 {
		t.Errorf("gemma3 wrapper: context %d, want 512", got)
	}
}
