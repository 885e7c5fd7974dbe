package trainer

import (
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
)

// TestModelContext: the model's context is max_position_embeddings, times
// the factor of a linear rope_scaling (as vLLM's max_model_len); llama3's
// max_position_embeddings already counts its scaling.
func TestModelContext(t *testing.T) {
	for _, c := range []struct {
		rope hfconfig.RoPE
		want int
	}{
		{hfconfig.RoPE{Type: "default"}, 4096},
		{hfconfig.RoPE{Type: "linear", Factor: 2}, 8192},
		{hfconfig.RoPE{Type: "llama3", Factor: 8, OriginalMaxPositionEmbeddings: 512}, 4096},
	} {
		if got := ModelContext(&hfconfig.Config{MaxPositionEmbeddings: 4096, RoPE: c.rope}); got != c.want {
			t.Errorf("%+v: context %d, want %d", c.rope, got, c.want)
		}
	}
}
