package serve

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTemperatureFloor: a temperature above 0 and below 0.01 samples at
// 0.01, as vLLM's SamplingParams raises it (_MAX_TEMP), rather than at the
// temperature sent or greedily; 0 stays greedy. The first row's two best
// tokens are brought within 0.005 of each other by logit_bias, so that
// sampling at 0.01 picks the second for some of 8 seeded choices where
// greedy, or a far lower temperature, never does.
func TestTemperatureFloor(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	var scored struct {
		Choices []struct {
			Logprobs struct {
				TopLogprobs []map[string]float64 `json:"top_logprobs"`
			} `json:"logprobs"`
		}
	}
	ts.postHonoured(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":1,"temperature":0,
		"logprobs":2,"return_tokens_as_token_ids":true}`, &scored)
	top := scored.Choices[0].Logprobs.TopLogprobs[0]
	if len(top) != 2 {
		t.Fatalf("top_logprobs %v, want 2 entries", top)
	}
	type entry struct {
		id int
		lp float64
	}
	var es []entry
	for k, lp := range top {
		id, err := strconv.Atoi(strings.TrimPrefix(k, "token_id:"))
		if err != nil {
			t.Fatalf("top_logprobs key %q: %v", k, err)
		}
		es = append(es, entry{id, lp})
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(b.lp, a.lp) })
	bias := es[0].lp - es[1].lp - 0.005
	ask := func(temp string) []int32 {
		t.Helper()
		var resp struct{ Choices []sampledChoice }
		ts.postHonoured(t, "/v1/completions", fmt.Sprintf(`{"model":"tiny","prompt":"hi","max_tokens":1,"n":8,"seed":11,
			"temperature":%s,"logit_bias":{"%d":%v},"return_token_ids":true}`, temp, es[1].id, bias), &resp)
		var ids []int32
		for _, c := range resp.Choices {
			ids = append(ids, c.TokenIDs...)
		}
		return ids
	}
	floor := ask("0.01")
	if !slices.Contains(floor, int32(es[1].id)) {
		t.Fatalf("temperature 0.01 never picked the near-tied token %d: %v", es[1].id, floor)
	}
	for _, temp := range []string{"5e-7", "5e-6", "0.001", "0.0099"} {
		if got := ask(temp); !slices.Equal(got, floor) {
			t.Errorf("temperature %s: tokens %v, want those of temperature 0.01 %v", temp, got, floor)
		}
	}
	greedy := ask("0")
	for _, id := range greedy {
		if id != int32(es[0].id) {
			t.Errorf("temperature 0: tokens %v, want all the greedy %d", greedy, es[0].id)
			break
		}
	}
}
