package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MetadataKeyChatTemplateKwargs is the trajectory metadata key under which
// the stages that make rollouts (hone-collect --chat-template-kwargs, the
// recording proxy) record the chat template kwargs the episode's model
// calls were served with, as a compact JSON object with sorted keys
// (CanonicalChatTemplateKwargs). Kwargs such as Qwen3's enable_thinking
// change the prompt the model saw, so training lays the row out with the
// same ones. A row without the key was served without kwargs, or by a
// stage that did not record them.
const MetadataKeyChatTemplateKwargs = "hone.chat_template_kwargs"

// CanonicalChatTemplateKwargs parses s, a JSON object of chat template
// kwargs, and returns it with its canonical text: compact, keys sorted, so
// that two spellings of one value compare equal. null and {} are no kwargs
// (a nil map and ""), since a template renders them alike.
func CanonicalChatTemplateKwargs(s string) (map[string]any, string, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 || b[0] != '{' && string(b) != "null" {
		return nil, "", fmt.Errorf("%q: want a JSON object, e.g. {\"enable_thinking\":false}", s)
	}
	var kw map[string]any
	if err := json.Unmarshal(b, &kw); err != nil {
		return nil, "", fmt.Errorf("%q: want a JSON object: %w", s, err)
	}
	if len(kw) == 0 {
		return nil, "", nil
	}
	c, err := json.Marshal(kw)
	if err != nil {
		return nil, "", fmt.Errorf("%q: %w", s, err)
	}
	return kw, string(c), nil
}
