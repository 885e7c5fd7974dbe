package layout

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/modelfolder"
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

// TestTokenPastTheVocabulary: a token the tokenizer knows and the model
// has no embedding for (as Gemma 3 1B's <image_soft_token>, 262144, past
// its vocabulary of 262144; here an added "<|image|>" past the Llama
// folder's 262) is an error naming it and where it is, in a prompt or in a
// turn's sampled ids, rather than a step that fails in the embedding.
// FromFolder takes the vocabulary from config.json.
func TestTokenPastTheVocabulary(t *testing.T) {
	dir := mt.Llama32(t)
	specials := []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|image|>"}
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.TokenizerFile), mt.ByteTokenizer(specials))
	f, err := modelfolder.Open(dir, modelfolder.Config|modelfolder.Tokenizer|modelfolder.Template)
	if err != nil {
		t.Fatal(err)
	}
	m := FromFolder(f)
	image := 256 + len(specials) - 1
	if m.Vocab != f.Config.VocabSize || m.Vocab != image {
		t.Fatalf("FromFolder: Vocab %d, config.json's %d; want %d", m.Vocab, f.Config.VocabSize, image)
	}
	for _, c := range []struct {
		name string
		msgs []trajectory.Message
		want string
	}{
		{"prompt", []trajectory.Message{{Role: "user", Content: "look <|image|>"}, {Role: "assistant", Content: "ok", Trainable: true}}, `a prompt holds the token "<|image|>"`},
		{"turn", []trajectory.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "ok", Trainable: true, TokenIDs: []int32{'o', int32(image), mt.EOT}}}, `message 1 holds the token "<|image|>"`},
	} {
		_, err := m.Layout(t.Context(), c.msgs, nil, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	m.Vocab = 0 // unknown: nothing is checked
	if _, err := m.Layout(t.Context(), []trajectory.Message{{Role: "user", Content: "look <|image|>"}, {Role: "assistant", Content: "ok"}}, nil, Options{}); err != nil {
		t.Fatal(err)
	}
}
