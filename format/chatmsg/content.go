package chatmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ContentError says what in a message's content OpenAI's API would refuse.
type ContentError struct {
	// Path leads from the content to the fault: "" for the content itself,
	// "[2]" for its third part, "[2].text" for that part's text.
	Path string
	Want string // what belongs there, in words: "a string"
	Got  string // what is there, in words: "a number"
}

func (e *ContentError) Error() string {
	return fmt.Sprintf("content%s: %s", e.Path, e.Detail())
}

// Detail is the error without the path: "expected a string, got a number".
func (e *ContentError) Detail() string {
	return fmt.Sprintf("expected %s, got %s", e.Want, e.Got)
}

// ContentText checks content given as JSON (a Message's ContentJSON) and
// returns its text. Null (or nothing) is "", a JSON string is its value,
// and a list of content parts gives its "text" parts joined, in order;
// other parts (image_url, input_audio, file, ...) add no text. Each part
// must be an object whose "type" is a string, and a text part's "text" a
// string; anything else is a *ContentError.
func ContentText(raw json.RawMessage) (string, error) { return contentText(raw, "") }

// ContentLines is ContentText with the text parts joined by newlines: what
// vLLM gives a chat template that takes a message's content as a string
// when the content is a list of parts (its "string" content format).
func ContentLines(raw json.RawMessage) (string, error) { return contentText(raw, "\n") }

func contentText(raw json.RawMessage, sep string) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch JSONKind(raw) {
	case "nothing", "null":
		return "", nil
	case "string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("content: %w", err)
		}
		return s, nil
	}
	var parts []json.RawMessage
	if JSONKind(raw) != "array" || json.Unmarshal(raw, &parts) != nil {
		return "", &ContentError{Want: "a string or an array of content parts", Got: kindPhrase(raw)}
	}
	var sb strings.Builder
	texts := 0
	for j, p := range parts {
		at := fmt.Sprintf("[%d]", j)
		var part struct {
			Type json.RawMessage `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if JSONKind(p) != "object" || json.Unmarshal(p, &part) != nil {
			return "", &ContentError{Path: at, Want: "a content part (an object with a type)", Got: kindPhrase(p)}
		}
		var typ string
		if json.Unmarshal(part.Type, &typ) != nil {
			return "", &ContentError{Path: at + ".type", Want: `a string such as "text"`, Got: kindPhrase(part.Type)}
		}
		if typ != "text" {
			continue
		}
		var text string
		if JSONKind(part.Text) != "string" || json.Unmarshal(part.Text, &text) != nil {
			return "", &ContentError{Path: at + ".text", Want: "a string", Got: kindPhrase(part.Text)}
		}
		if texts > 0 {
			sb.WriteString(sep)
		}
		texts++
		sb.WriteString(text)
	}
	return sb.String(), nil
}

// JSONKind names the JSON type of a raw value: string, number, bool,
// null, array, object, or nothing (as json.UnmarshalTypeError.Value does).
func JSONKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// kindPhrase says the JSON type of a raw value in a sentence.
func kindPhrase(raw []byte) string {
	switch k := JSONKind(raw); k {
	case "null", "nothing":
		return k
	case "string", "number":
		return "a " + k
	case "bool":
		return "a boolean"
	case "array":
		return "an array"
	default:
		return "an object"
	}
}
