package serve

import (
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/modelfolder"
	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
)

// TestGemma3MultimodalServes: a Gemma3ForConditionalGeneration folder, in
// either layout, serves its text model: the same greedy tokens and
// logprobs as the gemma3_text folder of the same weights, and the same
// stop tokens.
func TestGemma3MultimodalServes(t *testing.T) {
	text := mt.Gemma3Text(t)
	answer := func(dir string) (ids []int32, lps []float64, eos []int32) {
		t.Helper()
		ts := startServer(t, Options{Model: dir, ServedModelName: "g"}, nil)
		ids, lps = chatTokens(t, ts, `{"model": "g", "messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 6, "temperature": 0,
			"ignore_eos": true, "logprobs": true, "return_token_ids": true}`)
		return ids, lps, ts.s.eos
	}
	wantIDs, wantLPs, wantEOS := answer(text)
	if len(wantIDs) != 6 || len(wantLPs) != 6 {
		t.Fatalf("text folder: %d tokens, %d logprobs; want 6", len(wantIDs), len(wantLPs))
	}
	if !slices.Equal(wantEOS, []int32{mt.GemmaEOS, mt.GemmaEndOfTurn}) {
		t.Errorf("text folder stops on %v", wantEOS)
	}
	for _, layout := range modelfolder.Layouts(&hfconfig.Config{Wrapper: "gemma3"}) {
		t.Run(layout.Model, func(t *testing.T) {
			ids, lps, eos := answer(mt.Gemma3Multimodal(t, text, layout))
			if !slices.Equal(ids, wantIDs) || !slices.Equal(lps, wantLPs) || !slices.Equal(eos, wantEOS) {
				t.Errorf("multimodal folder: ids %v logprobs %v stops %v; text folder %v %v %v", ids, lps, eos, wantIDs, wantLPs, wantEOS)
			}
		})
	}
}
