package trajectory

import (
	"strconv"
	"strings"
)

// logprobTokenPrefix begins a logprobs token that names its id rather
// than its text (vLLM's return_tokens_as_token_ids).
const logprobTokenPrefix = "token_id:"

// LogprobTokenName is token id as return_tokens_as_token_ids writes it in
// logprobs, "token_id:<id>": what hone-serve answers and LogprobTokenIDs
// reads back.
func LogprobTokenName(id int32) string {
	return logprobTokenPrefix + strconv.Itoa(int(id))
}

// SampledIDs is a turn's sampled ids: ids, a server's token_ids, or when
// it sent none (a server without return_token_ids, the proxy's
// --no-token-ids) the ids its logprobs tokens name (LogprobTokenIDs), so
// that training places the logprobs on the exact ids sampled rather than
// tokenizing the text again. Both the recording proxy and hone-collect's
// agent loop record turns by it.
func SampledIDs(ids []int32, tokens []string) []int32 {
	if len(ids) > 0 {
		return ids
	}
	return LogprobTokenIDs(tokens)
}

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
		s, ok := strings.CutPrefix(tok, logprobTokenPrefix)
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
