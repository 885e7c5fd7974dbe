// Package chatmsg owns the OpenAI chat message shape: the one codec every
// stage uses to read and write a chat message as JSON.
//
// A Message is what a chat completion request's "messages" hold and what a
// response's choice carries: role; content, which on the wire is a string,
// null or a list of content parts ({"type": "text", "text": ...},
// {"type": "image_url", ...}, any other part kept as it came); name;
// tool_calls ({"id", "type": "function", "function": {"name",
// "arguments"}}); tool_call_id; and reasoning_content, the reasoning that
// vLLM's reasoning parsers return apart from the content (and that Qwen3's
// template reads back). A Delta is one streamed chunk of an assistant
// message, and a Builder assembles deltas into the message. A Tool is one
// offered function tool.
//
// Who uses it: format/trajectory (JSON Lines import and export, and the
// conversion of its Message), format/chattemplate (the messages a template
// renders), serve (the request's messages, the response's message and
// stream deltas), collect (the stdio environment protocol, the policy's
// requests and answers, the recording proxy) and score/ruler (what the
// judge is shown).
//
// One set of rules, written down here once:
//   - Keys are written in one order: role, name, content, tool_calls,
//     tool_call_id, reasoning_content; optional ones only when set. A
//     tool call is written with "id", a "type" ("function" when empty) and
//     "arguments" always there, as OpenAI requires them. MarshalJSON does
//     not HTML-escape ("<" and "&" stay as written when the encoder around
//     it has SetEscapeHTML(false)), and raw JSON (content parts, tool
//     parameters) keeps its key order.
//   - Content that is a JSON string becomes Content. Any other content
//     (null, a list of parts, or no "content" key, which reads as null) is
//     kept as its JSON in ContentJSON and written back exactly; ContentText
//     checks such content and gives its text: the "text" parts joined.
//   - Tool-call arguments are the JSON text as the model wrote it; when a
//     message gives them as a JSON object (as Hugging Face's examples do)
//     the object's text is kept. A call without a type is a function call.
//
// Reading is lenient, so that a server can name what is wrong: Unmarshal
// refuses only JSON of the wrong types, and ContentText says which part of
// the content OpenAI's API would refuse.
package chatmsg
