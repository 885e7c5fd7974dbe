package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/hone-rl/hone/format/chatmsg"
)

// continueTag marks where the final message's text ends in a rendering
// with ContinueFinalMessage: the text is cut there. Found by its last
// occurrence, so content that appears earlier in the conversation (or a
// template that copies the last message into a system prompt) cannot move
// the cut, as finding the content itself could. Its trailing space tells a
// template that keeps the content's end from one that trims it (then the
// cut drops the whitespace before the tag too). transformers marks the
// message the same way.
const continueTag = "CONTINUE_FINAL_MESSAGE_TAG "

// markFinalMessage returns msgs with continueTag after the text of the last
// message (after its last text part when the content is a list of parts),
// and that text. A last message with no text (null content, or parts none
// of which has "text") is an error: there is nothing to continue.
func markFinalMessage(msgs []chatmsg.Message) ([]chatmsg.Message, string, error) {
	if len(msgs) == 0 {
		return nil, "", errors.New("continue_final_message: there is no message to continue")
	}
	msgs = slices.Clone(msgs)
	last := &msgs[len(msgs)-1]
	if len(last.ContentJSON) == 0 {
		final := last.Content
		last.Content += continueTag
		return msgs, final, nil
	}
	var parts []json.RawMessage
	if chatmsg.JSONKind(last.ContentJSON) != "array" || json.Unmarshal(last.ContentJSON, &parts) != nil {
		return nil, "", fmt.Errorf("continue_final_message: message %d (%s) has no text to continue", len(msgs)-1, last.Role)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		var part map[string]json.RawMessage
		if json.Unmarshal(parts[i], &part) != nil || part["text"] == nil {
			continue
		}
		var final string
		if err := json.Unmarshal(part["text"], &final); err != nil {
			return nil, "", fmt.Errorf("continue_final_message: message %d content[%d].text: %w", len(msgs)-1, i, err)
		}
		// Re-encoded from a map: the part's keys come back sorted, which
		// no template reading part.type and part.text can tell.
		part["text"], _ = json.Marshal(final + continueTag)
		b, err := json.Marshal(part)
		if err != nil {
			return nil, "", fmt.Errorf("continue_final_message: message %d content[%d]: %w", len(msgs)-1, i, err)
		}
		parts = slices.Clone(parts)
		parts[i] = b
		if last.ContentJSON, err = json.Marshal(parts); err != nil {
			return nil, "", fmt.Errorf("continue_final_message: message %d content: %w", len(msgs)-1, err)
		}
		return msgs, final, nil
	}
	return nil, "", fmt.Errorf("continue_final_message: message %d (%s) has no text part to continue", len(msgs)-1, last.Role)
}

// cutAtContinueTag cuts a rendering of markFinalMessage's messages just
// before the tag's last occurrence; when the template trimmed the space
// that ends the tag, it trimmed the message's end as well, and so is the
// whitespace before the tag. A template that dropped the final message's
// text or the tag cannot be continued: an error.
func cutAtContinueTag(out, final string) (string, error) {
	bare := strings.TrimSpace(continueTag)
	at := strings.LastIndex(out, bare)
	if at < 0 || !strings.Contains(out, strings.TrimSpace(final)) {
		return "", errors.New("continue_final_message: the final message does not appear in the rendered chat template (the template leaves out or rewrites part of it)")
	}
	if strings.HasPrefix(out[at:], continueTag) {
		return out[:at], nil
	}
	return strings.TrimRightFunc(out[:at], unicode.IsSpace), nil
}
