package hfconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts satisfies the
// invariants a model builder relies on.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"qwen2.5-0.5b-instruct", "qwen3-1.7b", "llama-3.2-1b-instruct"} {
		b, err := os.ReadFile(filepath.Join("testdata", name, ConfigName))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model_type":"llama","vocab_size":1,"hidden_size":2,"intermediate_size":1,"num_hidden_layers":1,"num_attention_heads":1,"rope_parameters":{"rope_type":"llama3","factor":1,"low_freq_factor":1,"high_freq_factor":2,"original_max_position_embeddings":1}}`))
	f.Add([]byte(`{"model_type":"qwen3","eos_token_id":[1,2],"bos_token_id":null}`))
	f.Add([]byte(gemma3_1b))
	f.Add([]byte(`{"model_type":"gemma3_text","vocab_size":4,"hidden_size":2,"intermediate_size":1,"num_hidden_layers":2,"num_attention_heads":1,"head_dim":2,"layer_types":["full_attention","sliding_attention"],"rope_parameters":{"full_attention":{"rope_type":"default"},"sliding_attention":{"rope_theta":5}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		if c.NumKeyValueHeads <= 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0 || c.HeadDim <= 0 || c.HeadDim%2 != 0 ||
			c.HiddenSize <= 0 || c.VocabSize <= 0 || !(c.RMSNormEps > 0) || !(c.RoPE.Theta > 0) ||
			c.QDim() <= 0 || c.KVDim() <= 0 || c.MaxModelLen() <= 0 {
			t.Fatalf("accepted inconsistent config %+v", c)
		}
		for _, id := range c.EOSTokenIDs {
			if id < 0 || id >= c.VocabSize {
				t.Fatalf("eos id %d outside vocab %d", id, c.VocabSize)
			}
		}
		if c.ModelType == "gemma3_text" && (len(c.LayerTypes) != c.NumHiddenLayers || !(c.LocalRoPETheta > 0) ||
			!(c.QueryPreAttnScalar > 0) || c.SlidingWindow <= 0 || !c.SandwichNorms || !c.QKNorm) {
			t.Fatalf("accepted inconsistent gemma3_text config %+v", c)
		}
		if c.RoPE.Type == "llama3" && !(c.RoPE.HighFreqFactor > c.RoPE.LowFreqFactor && c.RoPE.OriginalMaxPositionEmbeddings > 0) {
			t.Fatalf("bad llama3 rope %+v", c.RoPE)
		}
	})
}
