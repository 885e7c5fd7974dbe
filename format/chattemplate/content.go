package chattemplate

import "regexp"

// How a template takes a message's content. OpenAI's clients send a message
// of several parts as a list of content parts ([{"type":"text","text":…},
// …]). A template that loops over a message's content (Gemma 3's, for its
// images; the vision models') wants that list; most text models' templates
// (Qwen2.5's, Qwen3's, Llama 3.1's) put message.content into the prompt as
// a string, and given the list they print its Python repr or fail. vLLM
// decides by the template's text (its "auto" chat-template content format:
// "openai" when the template loops over a message's content, else
// "string"); so does Render, through loopsOverContent.

// contentExpr is a message's content: message.content, m['content'].
const contentExpr = `\w+\s*(?:\.\s*content\b|\[\s*['"]content['"]\s*\])`

var (
	// setContentRE finds {% set name = message['content'] %}.
	setContentRE = regexp.MustCompile(`\{%-?\s*set\s+(\w+)\s*=\s*` + contentExpr + `\s*-?%\}`)
	// forInRE finds the iterable of a {% for … in … %} that is a name or
	// a content expression, ending there (not content.split(…)).
	forInRE = regexp.MustCompile(`\{%-?\s*for\s+[\w\s,]+?\s+in\s+(` + contentExpr + `|\w+)\s*(?:-?%\}|if\b|recursive\b|\|)`)
	// contentRE is a whole content expression.
	contentRE = regexp.MustCompile(`^` + contentExpr + `$`)
)

// loopsOverContent reports whether a template's source iterates over a
// message's content, directly or through a variable set from it.
func loopsOverContent(src string) bool {
	names := map[string]bool{}
	for _, m := range setContentRE.FindAllStringSubmatch(src, -1) {
		names[m[1]] = true
	}
	for _, m := range forInRE.FindAllStringSubmatch(src, -1) {
		if contentRE.MatchString(m[1]) || names[m[1]] {
			return true
		}
	}
	return false
}
