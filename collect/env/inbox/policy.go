package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// Policies implements env.Scripted: "searcher" searches for the question's
// keywords, reads the hits until one holds the answer and cites it;
// "random" searches a random word, reads a random hit and answers with a
// word from it.
func (e *Env) Policies() []string { return []string{"searcher", "random"} }

// Policy implements env.Scripted. Both read only the conversation.
func (e *Env) Policy(name string, seed int64) (env.Policy, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x706f6c))
	switch name {
	case "searcher":
		return env.PolicyFunc(searcher), nil
	case "random":
		return env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
			return randomTurn(rng, msgs), nil
		}), nil
	}
	return nil, fmt.Errorf("inbox: %w %q (have %v)", env.ErrUnknownPolicy, name, e.Policies())
}

func call(n int, name string, args any) trajectory.Message {
	b, _ := json.Marshal(args)
	return trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: fmt.Sprintf("call_%d", n), Type: "function", Name: name, Arguments: string(b)}}}
}

// history is what a policy gathers from the conversation.
type history struct {
	question string
	turns    int
	hits     []SearchResult // from the latest search
	read     map[string]Email
	readIDs  []string
	last     *trajectory.Message
}

func gather(msgs []trajectory.Message) history {
	h := history{read: map[string]Email{}}
	calls := map[string]string{} // call id → tool name
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "user":
			if h.question == "" {
				h.question = m.Content
			}
		case "assistant":
			h.turns++
			for _, c := range m.ToolCalls {
				calls[c.ID] = c.Name
			}
		case "tool":
			switch calls[m.ToolCallID] {
			case "search_inbox":
				var rs []SearchResult
				if json.Unmarshal([]byte(m.Content), &rs) == nil {
					h.hits = rs
				} else {
					h.hits = nil
				}
			case "read_email":
				var em Email
				if json.Unmarshal([]byte(m.Content), &em) == nil && em.ID != "" {
					h.read[em.ID] = em
					h.readIDs = append(h.readIDs, em.ID)
				}
			}
		}
		h.last = m
	}
	return h
}

func searcher(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
	h := gather(msgs)
	for _, k := range questionKeys {
		m := k.q.FindStringSubmatch(h.question)
		if m == nil {
			continue
		}
		pat := k.answer(m)
		for _, id := range h.readIDs {
			if a := pat.FindStringSubmatch(h.read[id].Body); a != nil {
				return call(h.turns, "return_final_answer", map[string]any{"answer": a[1], "sources": []string{id}}), nil
			}
		}
		if h.turns == 0 {
			return call(h.turns, "search_inbox", map[string]any{"keywords": k.keys(m)}), nil
		}
		for _, r := range h.hits {
			if _, done := h.read[r.ID]; !done {
				return call(h.turns, "read_email", map[string]any{"message_id": r.ID}), nil
			}
		}
		return call(h.turns, "return_final_answer", map[string]any{"answer": "I could not find it", "sources": []string{}}), nil
	}
	return env.Assistant("I do not know."), nil
}

func randomTurn(rng *rand.Rand, msgs []trajectory.Message) trajectory.Message {
	h := gather(msgs)
	switch {
	case h.turns == 0:
		words := strings.Fields(strings.Trim(h.question, "?"))
		return call(0, "search_inbox", map[string]any{"keywords": []string{words[rng.IntN(len(words))]}})
	case len(h.readIDs) == 0 && len(h.hits) > 0:
		return call(h.turns, "read_email", map[string]any{"message_id": h.hits[rng.IntN(len(h.hits))].ID})
	}
	var words []string
	src := []string{}
	if len(h.readIDs) > 0 {
		id := h.readIDs[0]
		words, src = strings.Fields(h.read[id].Body), []string{id}
	}
	ans := "unknown"
	if len(words) > 0 {
		ans = words[rng.IntN(len(words))]
	}
	return call(h.turns, "return_final_answer", map[string]any{"answer": ans, "sources": src})
}
