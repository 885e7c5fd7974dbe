package serve

import (
	"context"
	"strconv"

	"github.com/hone-rl/hone/serve/engine"
)

// promptScore is a prompt scored by scorePrompt: at each position j ≥ 1
// (index 0 is unused), log p(prompt[j] | prompt[:j]), that token's rank
// (1 + the tokens more likely) and the best alternatives.
type promptScore struct {
	lp   []float32
	rank []int
	tops [][]engine.TokenLogprob
}

// promptLogprob is one entry of vLLM's prompt_logprobs.
type promptLogprob struct {
	Logprob      float32 `json:"logprob"`
	Rank         int     `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

// maxPromptLogprobs is vLLM's default --max-logprobs, the most alternatives
// prompt_logprobs may ask for, as logprobs and top_logprobs here.
const maxPromptLogprobs = 20

// promptLogprobsK reads vLLM's prompt_logprobs: the alternatives asked
// for at each prompt token (-1: the whole vocabulary of vocab tokens), and
// whether any were. With stream only 0 passes, and is dropped, as in vLLM:
// stream chunks have no place for them. Past maxPromptLogprobs is a 400.
func promptLogprobsK(f *samplingFields, vocab int) (int, bool, error) {
	k := f.PromptLogprobs
	switch {
	case k == nil:
		return 0, false, nil
	case *k < -1:
		return 0, false, badRequest("prompt_logprobs", "prompt_logprobs must be -1 (the whole vocabulary) or at least 0, got %d", *k)
	case f.Stream && *k == 0:
		return 0, false, nil
	case f.Stream:
		return 0, false, badRequest("prompt_logprobs", "prompt_logprobs are not available when stream is true")
	}
	n := *k
	if n == -1 {
		n = vocab
	}
	if n > maxPromptLogprobs {
		return 0, false, badRequest("prompt_logprobs", "requested prompt logprobs of %d, which is greater than the %d allowed", n, maxPromptLogprobs)
	}
	return n, true, nil
}

// scoreRequestPrompt scores prompt (for echo with logprobs, or
// prompt_logprobs) with the adapter held for the request, keeping top
// alternatives; param names the field that holds the prompt.
func (s *Server) scoreRequestPrompt(ctx context.Context, prompt []int32, held *hold, n int, param string, top int) (promptScore, error) {
	// Refused before the scoring forward when the engine would refuse the
	// generation after it: overload must not cost work. (The queue may
	// still fill while the prompt is scored; Submit then refuses as it
	// does any request.)
	if err := s.eng.QueueRoom(n); err != nil {
		return promptScore{}, submitError(err)
	}
	// The prompt is scored by one full forward that holds [N, V] logits;
	// refuse what would not fit in maxScoreBytes.
	if need := int64(len(prompt)) * int64(s.m.Config.Vocab) * 4; need > maxScoreBytes {
		return promptScore{}, badRequest(param, "the logprobs of %d prompt tokens (echo with logprobs, or prompt_logprobs) need %d bytes of logits; the limit is %d", len(prompt), need, int64(maxScoreBytes))
	}
	sc, err := s.scorePrompt(ctx, prompt, held.weights(), top)
	if err != nil {
		return promptScore{}, genError(ctx, err)
	}
	return sc, nil
}

// trimTops is tops with at most n alternatives at each position.
func trimTops(tops [][]engine.TokenLogprob, n int) [][]engine.TokenLogprob {
	out := make([][]engine.TokenLogprob, len(tops))
	for j, t := range tops {
		out[j] = t[:min(len(t), n)]
	}
	return out
}

// promptLogprobList is vLLM's prompt_logprobs of prompt from its scoring:
// null for the first token, then a map from token id to logprob, rank and
// text holding the prompt's token and the k best (ranks 1 to k). The text
// is the token's whatever return_tokens_as_token_ids says: vLLM writes
// "token_id:<id>" in the logprobs field only, and passes the engine's
// prompt logprobs, decoded one token at a time, through as they are.
func (s *Server) promptLogprobList(prompt []int32, sc promptScore, k int) []map[string]promptLogprob {
	out := make([]map[string]promptLogprob, len(prompt))
	text := func(id int32) string {
		t, _ := s.tokenString(id)
		return t
	}
	for j := 1; j < len(prompt); j++ {
		m := map[string]promptLogprob{
			strconv.Itoa(int(prompt[j])): {Logprob: wireLogprob(sc.lp[j]), Rank: sc.rank[j], DecodedToken: text(prompt[j])},
		}
		for r, tl := range sc.tops[j][:min(len(sc.tops[j]), k)] {
			m[strconv.Itoa(int(tl.ID))] = promptLogprob{Logprob: wireLogprob(tl.Logprob), Rank: r + 1, DecodedToken: text(tl.ID)}
		}
		out[j] = m
	}
	return out
}
