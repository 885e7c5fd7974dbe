package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
)

// idJSON is a token id as tokenizer.json spells it. Decoding it never
// fails: a value that is not an integer is kept as its JSON text, so that
// the check can name the token it belongs to (encoding/json's own error
// names neither the token nor the value).
type idJSON struct {
	n   int64
	bad string // the JSON text of a value that is not an integer in int64
	set bool   // the id was there
}

func (id *idJSON) UnmarshalJSON(b []byte) error {
	id.set = true
	n, ok := parseInt(b)
	if !ok {
		id.bad = string(b)
		return nil
	}
	id.n = n
	return nil
}

// parseInt reads a JSON number that is an integer: an optional minus and
// at most 18 digits (so it fits in int64), no fraction, no exponent.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// ok reports whether id can be a token id at all. Ids are kept as int32.
func (id idJSON) ok() bool { return id.set && id.bad == "" && id.n >= 0 && id.n <= math.MaxInt32 }

func (id idJSON) String() string {
	if id.bad != "" {
		return id.bad
	}
	return strconv.FormatInt(id.n, 10)
}

func badID(where, name string, id idJSON) error {
	if !id.set {
		return fmt.Errorf("%s %q has no id", where, name)
	}
	return fmt.Errorf("%s %q has id %s, not a whole number from 0 to %d", where, name, id, math.MaxInt32)
}

// addedJSON is one entry of "added_tokens" as decoded, before its id is
// checked.
type addedJSON struct {
	ID         idJSON `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

// token is the entry with its defaults filled in. An entry without
// "normalized" (or with null) is normalized unless it is special, as the
// reference reads it and as transformers' AddedToken defaults it: a
// hand-written file's plain added word is then matched after the
// normalizer, like the text around it.
func (a addedJSON) token() AddedToken {
	normalized := !a.Special
	if a.Normalized != nil {
		normalized = *a.Normalized
	}
	return AddedToken{ID: int(a.ID.n), Content: a.Content, SingleWord: a.SingleWord, LStrip: a.LStrip, RStrip: a.RStrip, Normalized: normalized, Special: a.Special}
}

// idSlack is the room idSpace leaves above twice the token count.
const idSlack = 1 << 16

// idSpace checks the id of every vocabulary entry and added token and
// returns the size of the id space, one more than the largest id.
//
// The tables indexed by id (each token's bytes and flags, about 30 bytes
// an id) are sized by the largest id, so one number in a small file could
// demand any amount of memory: an id of 2e9 asks for over 50 GB, and the
// allocation ends the process with a fatal out-of-memory that no caller
// can recover from. Real vocabularies number their tokens densely from 0
// (Qwen3: 151,669 tokens, ids 0–151,668; Llama 3: 128,256, ids 0–128,255),
// with holes at most where a model reserves ids. So the largest id must
// be below twice the number of tokens plus idSlack: the tables then cost a
// small multiple of what the file's own entries cost (a dozen bytes of
// JSON at least), and small hand-made tokenizers with a few high ids (256
// byte tokens and specials at 1000) still load. The rule depends on the
// file only, never on the machine.
//
// The vocabulary's ids were checked by vocabIDs; when several added tokens
// are wrong the one named is the first.
func idSpace(vocab map[string]int32, added []addedJSON) (int, error) {
	var top string // the vocabulary token with the largest id, the first in string order among equals
	topID := int64(-1)
	for tok, id := range vocab {
		if n := int64(id); n > topID || n == topID && tok < top {
			top, topID = tok, n
		}
	}
	topAdded := false
	for _, a := range added {
		if !a.ID.ok() {
			return 0, badID("added_tokens:", a.Content, a.ID)
		}
		if a.ID.n > topID {
			top, topID, topAdded = a.Content, a.ID.n, true
		}
	}
	n := int64(len(vocab) + len(added))
	if limit := 2*n + idSlack; topID >= limit {
		where := "model.vocab: token"
		if topAdded {
			where = "added_tokens:"
		}
		return 0, fmt.Errorf("%s %q has id %d, but the file has only %d tokens: ids number the tokens from 0, and the largest must be below %d (twice the tokens plus %d)",
			where, top, topID, n, limit, idSlack)
	}
	return int(topID) + 1, nil
}

// decodeJSON is json.Unmarshal with type errors told in JSON's words.
func decodeJSON(raw []byte, v any) error {
	return plainJSONError(json.Unmarshal(raw, v))
}

// plainJSONError rewrites encoding/json's type errors, which name Go types
// ("of type []tokenizer.addedJSON"), into what the file should hold.
func plainJSONError(err error) error {
	te, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return err
	}
	where := "a value"
	if te.Field != "" {
		where = fmt.Sprintf("field %q", te.Field)
	}
	return fmt.Errorf("%s: want %s, got JSON %s", where, jsonKind(te.Type), te.Value)
}

// jsonKind says in JSON's words what a value of Go type t is decoded from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another kind of value"
}
