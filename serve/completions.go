package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/serve/engine"
	"github.com/hone-rl/hone/train/model"
)

// parsePrompt reads a completions prompt: a string, an array of token ids,
// or a one-element array of either.
// A text is tokenized with the tokenizer's special tokens when addSpecial;
// keep (truncateKeep; 0: none) cuts it to its last keep tokens.
func (s *Server) parsePrompt(raw json.RawMessage, addSpecial bool, keep int) ([]int32, error) {
	ids, err := s.parsePromptAt(raw, "prompt", addSpecial, keep)
	if err == nil && keep > 0 && len(ids) > keep {
		ids = ids[len(ids)-keep:]
	}
	return ids, err
}

// parsePromptAt is parsePrompt for the value at path (prompt, prompt[0]),
// which its 400s name; addSpecial and keep go to encodePrompt for a text.
func (s *Server) parsePromptAt(raw json.RawMessage, path string, addSpecial bool, keep int) ([]int32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest("prompt", "prompt is required")
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return s.encodePrompt(str, addSpecial, "prompt", keep)
	}
	// By pointer: encoding/json decodes a null element into an int32 as 0
	// without an error, and [1, null, 3] became the prompt [1, 0, 3].
	var ptrs []*int32
	if json.Unmarshal(raw, &ptrs) == nil && !slices.Contains(ptrs, nil) {
		ids := make([]int32, len(ptrs))
		for i, p := range ptrs {
			if ids[i] = *p; ids[i] < 0 || int(ids[i]) >= s.m.Config.Vocab {
				return nil, badRequest("prompt", "token id %d outside the vocabulary [0, %d)", ids[i], s.m.Config.Vocab)
			}
		}
		return ids, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		// An array holding a number is token ids, one of which is not an
		// int32 (too large, a fraction) or not a number: name it, rather
		// than take the array for a batch of len(list) prompts.
		if slices.ContainsFunc(list, func(e json.RawMessage) bool { return chatmsg.JSONKind(e) == "number" }) {
			return nil, s.badTokenID(list, path)
		}
		if len(list) != 1 {
			return nil, badRequest("prompt", "this server takes one prompt per request, got %d", len(list))
		}
		return s.parsePromptAt(list[0], path+"[0]", addSpecial, keep)
	}
	return nil, badRequest("prompt", "prompt: want a string, an array of token ids, or a one-element array of either")
}

// badTokenID is the 400 for the first element of the token-id array list
// (at path) that is not a token id of int32 range.
func (s *Server) badTokenID(list []json.RawMessage, path string) error {
	for i, e := range list {
		var id *int32
		if json.Unmarshal(e, &id) == nil && id != nil {
			continue
		}
		got := kindPhrase(chatmsg.JSONKind(e))
		if chatmsg.JSONKind(e) == "number" {
			got = clip(string(bytes.TrimSpace(e)), 40)
		}
		at := fmt.Sprintf("%s[%d]", path, i)
		return badRequest(at, "%s: expected a token id (an integer from 0 to %d), got %s", at, s.m.Config.Vocab-1, got)
	}
	return badRequest(path, "%s: want an array of token ids", path)
}

// echoText is the text echo gives back, the prompt as sent, as vLLM
// echoes it: a string prompt is that string (not its tokens decoded, which
// would begin with the BOS token a tokenizer adds, Llama's or Gemma's),
// token ids their text. Without echo it is "", and nothing is decoded.
func (s *Server) echoText(req *completionRequest, prompt []int32) string {
	if !req.Echo {
		return ""
	}
	if text, ok := promptString(req.Prompt); ok {
		return text
	}
	return s.tok.Decode(toInts(prompt), false)
}

// promptString is a completions prompt given as a string, or as a
// one-element array of one: the text, true; otherwise "", false.
func promptString(raw json.RawMessage) (string, bool) {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str, true
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil && len(list) == 1 {
		return promptString(list[0])
	}
	return "", false
}

// completionsRun serves POST /v1/completions for req (jsonHandler decoded it).
func (s *Server) completionsRun(w http.ResponseWriter, r *http.Request, req *completionRequest) error {
	held, modelName, err := s.holdModel(req.Model)
	if err != nil {
		return err
	}
	defer held.release()
	keep, err := s.truncateKeep(&req.samplingFields)
	if err != nil {
		return err
	}
	prompt, err := s.parsePrompt(req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens, keep)
	if err != nil {
		return err
	}
	if len(prompt) == 0 {
		return badRequest("prompt", "prompt has no tokens")
	}
	p, n, err := s.params(&req.samplingFields, "prompt", len(prompt), req.Echo)
	if err != nil {
		return err
	}
	// Refused rather than ignored, as vLLM refuses them: the text after
	// the insertion and the best of several samples are not what a
	// client asking for them would get.
	if req.Suffix != nil && *req.Suffix != "" {
		return badRequest("suffix", "suffix is not supported by this server; leave it out")
	}
	if req.BestOf != nil && *req.BestOf != 1 && *req.BestOf != n {
		return badRequest("best_of", "best_of=%d is not supported by this server: it returns every one of the n=%d choices it samples (leave best_of out, or set it to n)", *req.BestOf, n)
	}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 20 {
			return badRequest("logprobs", "logprobs must be between 0 and 20, got %d", *req.Logprobs)
		}
		p.Logprobs, p.TopLogprobs = true, *req.Logprobs
	}
	if req.Stream && req.Echo {
		return badRequest("echo", "echo is not supported with stream")
	}
	ctx := r.Context() // the request's deadline, from its arrival (Handler)
	// response_format, allowed_token_ids and bad_words are read before the
	// prompt is scored, as every other field: a request that can only be a
	// 400 must cost no forward, nor be told to retry (429).
	rf, err := s.responseFormat(req.ResponseFormat)
	if err != nil {
		return err
	}
	if err := minTokensConstrained(&p, rf != nil, "response_format"); err != nil {
		return err
	}
	if p.MaxTokens == 0 {
		rf = nil // an echo-only answer samples nothing to constrain
	}
	cons, err := s.filterTokens(&req.samplingFields, &p, withMaxTokens(rf, p.MaxTokens))
	if err != nil {
		return err
	}
	// Prompt logprobs first: a failure here costs no generation. The
	// scoring forward uses the adapter under the handler's hold, which then
	// goes to the engine with the generation.
	plk, wantPL, err := promptLogprobsK(&req.samplingFields, s.m.Config.Vocab)
	if err != nil {
		return err
	}
	var sc promptScore
	if req.Echo && p.Logprobs || wantPL {
		if sc, err = s.scoreRequestPrompt(ctx, prompt, held, n, "prompt", max(p.TopLogprobs, plk)); err != nil {
			return err
		}
	}
	promptLP, promptTop := sc.lp, trimTops(sc.tops, p.TopLogprobs)
	ereq := &engine.Request{Prompt: prompt, N: n, Params: p, Constraint: cons}
	held.handTo(ereq)
	h, err := s.submit(ctx, ereq)
	if err != nil {
		return err
	}
	id, created := newID("cmpl-"), time.Now().Unix()
	if req.Stream {
		return s.completionStream(ctx, w, req, h, prompt, id, created, modelName)
	}
	outs, err := s.collect(ctx, h, n, modelName)
	if err != nil {
		return err
	}
	resp := completionResponse{ID: id, Object: "text_completion", Created: created, Model: modelName}
	u := s.usage(h, len(prompt))
	promptText := s.echoText(req, prompt)
	for i := range outs {
		o := &outs[i]
		u.CompletionTokens += len(o.ids)
		finish := o.finish
		ch := completionChoice{Index: i, Text: o.text.String(), FinishReason: &finish}
		if req.Echo {
			ch.Text = promptText + ch.Text
		}
		if p.Logprobs {
			ch.Logprobs = s.choiceLogprobs(req, prompt, promptLP, promptTop, o)
		}
		if req.ReturnTokenIDs {
			ch.TokenIDs = nonNil(o.ids)
			ch.PromptTokenIDs = prompt
		}
		if wantPL {
			ch.PromptLogprobs = s.promptLogprobList(prompt, sc, plk)
		}
		resp.Choices = append(resp.Choices, ch)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	resp.Usage = &u
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// choiceLogprobs are the logprobs of completion choice o: of the prompt's
// tokens first with echo (promptLP and promptTop from scorePrompt; the
// first token has none), then of its generated ones.
func (s *Server) choiceLogprobs(req *completionRequest, prompt []int32, promptLP []float32, promptTop [][]engine.TokenLogprob, o *choiceOut) *completionLogprobs {
	lp := &completionLogprobs{}
	offset := 0
	addTok := func(id int32, v *float32, top []engine.TokenLogprob) {
		t, _ := s.tokenString(id)
		name := s.logprobToken(id, req.tokensAsIDs(s.o.ReturnTokensAsTokenIDs))
		lp.Tokens = append(lp.Tokens, name)
		lp.TokenLogprobs = append(lp.TokenLogprobs, v)
		lp.TextOffset = append(lp.TextOffset, offset)
		if req.tokensAsIDs(s.o.ReturnTokensAsTokenIDs) {
			// vLLM counts the offsets over the tokens it returns,
			// "token_id:<id>" strings here, so that a client indexing the
			// joined tokens finds each one.
			t = name
		}
		offset += len(t)
		var m map[string]float32
		if v != nil {
			m = s.topLogprobs(id, *v, top, req.tokensAsIDs(s.o.ReturnTokensAsTokenIDs))
		}
		lp.TopLogprobs = append(lp.TopLogprobs, m)
	}
	if req.Echo {
		for j, id := range prompt {
			if j == 0 {
				addTok(id, nil, nil)
				continue
			}
			v := wireLogprob(promptLP[j])
			addTok(id, &v, promptTop[j])
		}
	}
	for j, id := range o.ids {
		v := wireLogprob(o.lps[j])
		addTok(id, &v, o.tops[j])
	}
	return lp
}

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// maxScoreBytes caps the logits one prompt-scoring forward may hold.
const maxScoreBytes = 1 << 30

// scorePrompt returns log p(prompt[j] | prompt[:j]) for j ≥ 1 (index 0 is
// unused), its rank and the top alternatives at each position, from one
// full forward.
// One forward runs at a time; a request waits for its turn until ctx ends,
// and with Options.MaxQueue requests already waiting it fails at once with
// engine.ErrQueueFull (a 429), as a generation would.
func (s *Server) scorePrompt(ctx context.Context, prompt []int32, ad *model.Adapter, top int) (promptScore, error) {
	if s.scoreWaiting.Add(1) > int64(s.o.MaxQueue) {
		s.scoreWaiting.Add(-1)
		return promptScore{}, fmt.Errorf("prompt logprobs: %w", engine.ErrQueueFull)
	}
	select {
	case s.scoreSlot <- struct{}{}:
		s.scoreWaiting.Add(-1)
	case <-ctx.Done():
		s.scoreWaiting.Add(-1)
		return promptScore{}, ctx.Err()
	}
	defer func() { <-s.scoreSlot }()
	N, V := len(prompt), s.m.Config.Vocab
	pos := make([]int32, N)
	for i := range pos {
		pos[i] = int32(i)
	}
	logits, err := s.m.Logits(ctx, &model.Batch{IDs: prompt, Pos: pos, SeqOff: []int32{0, int32(N)}}, ad)
	if err != nil {
		return promptScore{}, err
	}
	sc := promptScore{lp: make([]float32, N), tops: make([][]engine.TokenLogprob, N), rank: make([]int, N)}
	for j := 1; j < N; j++ {
		row := engine.LogSoftmax(s.m.Backend(), logits[(j-1)*V:j*V])
		v := row[prompt[j]]
		sc.lp[j], sc.tops[j], sc.rank[j] = v, engine.TopN(row, top), 1
		for _, x := range row {
			if x > v { // vLLM's rank: 1 + the tokens more likely
				sc.rank[j]++
			}
		}
	}
	return sc, nil
}

// topLogprobs is a completion's top_logprobs entry for the chosen token id
// of wire logprob v: the top alternatives and the chosen token, as OpenAI's
// legacy completions and vLLM always return it (up to logprobs+1 entries),
// each under logprobToken's key: its text as JSON writes it (wireText:
// each byte of a character split across tokens is "\ufffd"), so that no
// key comes twice, or with asIDs "token_id:<id>". The chosen token's key
// is its own, whatever alternative shares its text, so that
// top_logprobs[i][tokens[i]] is token_logprobs[i]; of other alternatives
// with the same text, the best stands for them.
func (s *Server) topLogprobs(id int32, v float32, top []engine.TokenLogprob, asIDs bool) map[string]float32 {
	own := s.logprobToken(id, asIDs)
	m := map[string]float32{}
	for _, tl := range top {
		tt := s.logprobToken(tl.ID, asIDs)
		if _, ok := m[tt]; ok || tt == own && tl.ID != id {
			continue
		}
		m[tt] = wireLogprob(tl.Logprob)
	}
	if _, ok := m[own]; !ok {
		m[own] = v
	}
	return m
}

// logprobToken names token id in completions logprobs (tokens and the
// top_logprobs keys): its text as JSON writes it (wireText), or with asIDs
// (return_tokens_as_token_ids) "token_id:<id>", as vLLM writes it.
func (s *Server) logprobToken(id int32, asIDs bool) string {
	if asIDs {
		return trajectory.LogprobTokenName(id)
	}
	t, _ := s.tokenString(id)
	return wireText(t)
}

// wireText is s as encoding/json writes it: each byte that is not part of
// a valid UTF-8 character becomes U+FFFD.
func wireText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// chunkLogprobs are the logprobs of a streamed completion chunk of one
// token, written as the whole answer writes them: wireLogprob's values
// (−Inf and NaN, from a row holding +Inf or NaN, would fail the chunk's
// encoding, and the chunk would be lost), the top alternatives of
// topLogprobs, and the token's text_offset, *offset: the length of the
// text of the choice's tokens before it, which it advances past the
// token. asIDs names the tokens as logprobToken does; the offset still
// counts the text, as vLLM's stream counts the text sent before a chunk.
func (s *Server) chunkLogprobs(id int32, lp float32, top []engine.TokenLogprob, offset *int, asIDs bool) *completionLogprobs {
	t, _ := s.tokenString(id)
	v := wireLogprob(lp)
	at := *offset
	*offset += len(t)
	tok := t
	if asIDs {
		tok = trajectory.LogprobTokenName(id)
	}
	return &completionLogprobs{Tokens: []string{tok}, TokenLogprobs: []*float32{&v}, TopLogprobs: []map[string]float32{s.topLogprobs(id, v, top, asIDs)}, TextOffset: []int{at}}
}

// completionStream writes completion chunks as server-sent events.
func (s *Server) completionStream(ctx context.Context, w http.ResponseWriter, req *completionRequest, h *engine.Handle, prompt []int32, id string, created int64, modelName string) error {
	sse := newSSE(w)
	completion := 0
	firstChunk := true
	offsets := map[int]int{} // choice → text_offset of its next token
	for {
		evs, done, err := h.Next(ctx)
		if err != nil {
			sse.sendError(genError(ctx, err))
			return nil
		}
		for _, ev := range evs {
			if ev.Err != nil {
				sse.sendError(s.seqError(ctx, ev.Err, modelName))
				return nil
			}
			ch := completionChoice{Index: ev.Choice, Text: ev.Text}
			if ev.Token >= 0 {
				completion++
				if req.ReturnTokenIDs {
					ch.TokenIDs = []int32{ev.Token}
				}
				if req.Logprobs != nil {
					off := offsets[ev.Choice]
					ch.Logprobs = s.chunkLogprobs(ev.Token, ev.Logprob, ev.Top, &off, req.tokensAsIDs(s.o.ReturnTokensAsTokenIDs))
					offsets[ev.Choice] = off
				}
			}
			if req.ReturnTokenIDs && firstChunk {
				ch.PromptTokenIDs = prompt
				firstChunk = false
			}
			if ev.Finish != "" {
				f := ev.Finish
				ch.FinishReason = &f
			}
			c := completionResponse{ID: id, Object: "text_completion", Created: created, Model: modelName, Choices: []completionChoice{ch}}
			if req.StreamOptions.continuous() {
				c.Usage = continuousUsage(len(prompt), completion)
			}
			sse.send(c)
		}
		if done {
			break
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sse.send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: modelName, Choices: []completionChoice{}, Usage: s.usageSoFar(h, len(prompt), completion)})
	}
	sse.done()
	return nil
}
