package layout

import (
	"slices"
	"testing"

	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestFolderStopTokensEndTheTurn: a Llama 3.2 folder's generation config
// lists <|end_of_text|>, <|eom_id|> and <|eot_id|>; a sampled turn that
// ends on any of them ends there (the template's <|eot_id|> is not
// appended), as serve stopped on it. The old hard-coded list knew
// <|eot_id|> and <|eom_id|> but not <|end_of_text|>.
func TestFolderStopTokensEndTheTurn(t *testing.T) {
	m, err := LoadModel(mt.Llama32(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, stop := range []int32{mt.EndOfText, mt.EOM, mt.EOT} {
		sampled := append(mt.Tokens("Hello"), stop)
		msgs := []trajectory.Message{
			{Role: "user", Content: "Hi"},
			{Role: "assistant", Content: "Hello", Trainable: true, TokenIDs: sampled, FinishReason: "stop"},
		}
		l, err := m.Layout(t.Context(), msgs, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		seq := l.Sequences[0]
		turn := seq.Turns[0]
		if !slices.Equal(seq.IDs[turn.Start:turn.End], sampled) || len(seq.IDs) != turn.End {
			t.Errorf("stop %d: turn %v then %v; want the sampled %v and nothing after", stop, seq.IDs[turn.Start:turn.End], seq.IDs[turn.End:], sampled)
		}
	}
}
