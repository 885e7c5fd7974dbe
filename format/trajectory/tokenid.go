package trajectory

import (
	"strconv"
	"strings"
)

// LogprobTokenIDs reads the token ids that vLLM's request extension
// return_tokens_as_token_ids writes as logprobs tokens, "token_id:<id>"
// (hone-serve writes them too): the ids, when every token of tokens names
// one, else nil. Clients such as OpenPipe ART's take the sampled ids from
// there, and a turn recorded from such logprobs needs no token_ids.
func LogprobTokenIDs(tokens []string) []int32 {
	if len(tokens) == 0 {
		return nil
	}
	ids := make([]int32, len(tokens))
	for i, tok := range tokens {
		s, ok := strings.CutPrefix(tok, "token_id:")
		if !ok {
			return nil
		}
		// A negative id is kept, for Validate to name, not dropped here.
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil
		}
		ids[i] = int32(id)
	}
	return ids
}
