package serve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hone-rl/hone/format/chattemplate"
)

// roleList is the message roles OpenAI's chat API accepts, for errors.
const roleList = "system, developer, user, assistant, tool or function"

// knownRole reports whether OpenAI's chat API accepts role. Templates get
// the role as it is; one they do not know may be left out of the prompt
// (Qwen's drops "developer" and "function"), as with vLLM.
func knownRole(role string) bool {
	switch role {
	case "system", "developer", "user", "assistant", "tool", "function":
		return true
	}
	return false
}

// checkMessages refuses what no template should be given: a missing or
// unknown role, and content that is neither text, null nor a list of
// content parts.
func checkMessages(msgs []chattemplate.Message) error {
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		switch {
		case m.Role == "":
			return badRequest(at+".role", "%s.role is missing; want %s", at, roleList)
		case !knownRole(m.Role):
			return badRequest(at+".role", "%s.role: unknown role %q; want %s", at, clip(m.Role, 40), roleList)
		}
		if err := checkContent(at+".content", m.ContentJSON); err != nil {
			return err
		}
	}
	return nil
}

// checkContent checks a message's content given as JSON other than a
// string (raw is nil for a string): null, or an array of content parts,
// each an object, text parts with their text a string.
func checkContent(at string, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || jsonKind(raw) == "null" {
		return nil
	}
	var parts []json.RawMessage
	if jsonKind(raw) != "array" || json.Unmarshal(raw, &parts) != nil {
		return badRequest(at, "%s: expected a string or an array of content parts, got %s", at, kindPhrase(jsonKind(raw)))
	}
	for j, p := range parts {
		pat := fmt.Sprintf("%s[%d]", at, j)
		var part struct {
			Type json.RawMessage `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if jsonKind(p) != "object" || json.Unmarshal(p, &part) != nil {
			return badRequest(pat, "%s: expected a content part (an object with a type), got %s", pat, kindPhrase(jsonKind(p)))
		}
		var typ string
		if json.Unmarshal(part.Type, &typ) != nil {
			return badRequest(pat+".type", "%s.type: expected a string such as \"text\", got %s", pat, kindPhrase(jsonKind(part.Type)))
		}
		if typ == "text" && jsonKind(part.Text) != "string" {
			return badRequest(pat+".text", "%s.text: expected a string, got %s", pat, kindPhrase(jsonKind(part.Text)))
		}
	}
	return nil
}

// kindPhrase says a JSON kind (as jsonKind names it) in a sentence.
func kindPhrase(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "a boolean"
	case "array":
		return "an array"
	case "object":
		return "an object"
	case "null":
		return "null"
	}
	return "nothing"
}
