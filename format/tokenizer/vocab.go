package tokenizer

import "fmt"

// PastVocabError is a token id at or past a model's vocabulary: a
// tokenizer may know tokens the model has no embedding for (Gemma 3 1B's
// has <image_soft_token> at 262144, past its 262144 rows), and such a
// token written in a text must be refused by name, by serving and
// training alike, not fail the forward pass. Its text reads after "…
// holds": "the token "<image_soft_token>" (id 262144), which the model's
// vocabulary of 262144 lacks".
type PastVocabError struct {
	Index int    // where in the ids
	ID    int    // the id
	Token string // its spelling (Token)
	Vocab int    // the model's vocabulary size
}

func (e *PastVocabError) Error() string {
	return fmt.Sprintf("the token %q (id %d), which the model's vocabulary of %d lacks", e.Token, e.ID, e.Vocab)
}

// CheckVocab returns a *PastVocabError for the first of ids at or past
// vocab, the model's vocabulary size; nil when there is none, or when
// vocab is 0 (not known).
func CheckVocab[T int | int32](t *Tokenizer, ids []T, vocab int) error {
	if vocab <= 0 {
		return nil
	}
	for i, id := range ids {
		if int(id) >= vocab {
			tok, _ := t.Token(int(id))
			return &PastVocabError{Index: i, ID: int(id), Token: tok, Vocab: vocab}
		}
	}
	return nil
}
