package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hone-rl/hone/format/chatmsg"
)

// roleList is chatmsg.Roles as errors list them: "system, ..., tool or
// function".
func roleList() string {
	r := chatmsg.Roles()
	return strings.Join(r[:len(r)-1], ", ") + " or " + r[len(r)-1]
}

// knownRole reports whether OpenAI's chat API accepts role. Templates get
// the role as it is; one they do not know may be left out of the prompt
// (Qwen's drops "developer" and "function"), as with vLLM.
func knownRole(role string) bool {
	return slices.Contains(chatmsg.Roles(), role)
}

// checkMessages refuses what no template should be given: a missing or
// unknown role, content that is neither text, null nor a list of content
// parts (chatmsg.ContentText says which part is wrong), and a part that is
// not text (an image, audio, a file): the models served here take text
// only, and a part left out of the prompt would be a silent change to the
// conversation (vLLM refuses such parts for a text-only model too).
func checkMessages(msgs []chatmsg.Message) error {
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		switch {
		case m.Role == "":
			return badRequest(at+".role", "%s.role is missing; want %s", at, roleList())
		case !knownRole(m.Role):
			return badRequest(at+".role", "%s.role: unknown role %q; want %s", at, clip(m.Role, 40), roleList())
		}
		if _, err := chatmsg.ContentText(m.ContentJSON); err != nil {
			var ce *chatmsg.ContentError
			if !errors.As(err, &ce) {
				return badRequest(at+".content", "%s.%v", at, err)
			}
			path := at + ".content" + ce.Path
			return badRequest(path, "%s: %s", path, ce.Detail())
		}
		if j, typ := nonTextPart(m.ContentJSON); j >= 0 {
			path := fmt.Sprintf("%s.content[%d].type", at, j)
			return badRequest(path, "%s: %q parts are not supported: the served model takes text only; send \"text\" parts or a string", path, clip(typ, 40))
		}
	}
	return nil
}

// nonTextPart finds the first content part whose type is not "text" in
// content that chatmsg.ContentText has accepted; -1 when there is none
// (content that is a string, null, or text parts only).
func nonTextPart(content json.RawMessage) (int, string) {
	if chatmsg.JSONKind(content) != "array" {
		return -1, ""
	}
	var parts []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return -1, "" // ContentText has said what is wrong
	}
	for j, p := range parts {
		if p.Type != "text" {
			return j, p.Type
		}
	}
	return -1, ""
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
