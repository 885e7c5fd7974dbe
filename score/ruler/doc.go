// Package ruler owns RULER scoring: one judge call per group, in which an
// LLM judge compares the group's attempts at one scenario with each other
// and gives each a score in [0,1] and a short explanation.
//
// Prompt assembly (Build): every trajectory's messages are rendered as
// OpenAI-shaped JSON without token ids, logprobs or timings (the judge has
// no use for them and they can overflow its context). The tools the agent
// could call are shown in OpenAI's tools shape inside <available_tools>:
// once when every trajectory had the same ones, else at the head of each
// trajectory's block. The longest prefix of messages that all
// trajectories share (usually the system prompt and the first user turn)
// is shown once, inside <shared_context>; then each trajectory's
// remainder — assistant turns, tool calls and tool results — inside
// <trajectory id="N">, with N counting from 1, followed inside the same
// block by each of the trajectory's additional histories in an
// <additional_history index="K"> block with its own tools (ART's RULER
// refuses such trajectories). The system message carries the instructions
// and the rubric (DefaultRubric, or the user's).
//
// A group of one cannot be ranked, and a group whose trajectories are all
// identical has nothing to rank: the judge then sees the one attempt,
// whole, with instructions to score it on an absolute scale, and its score
// is given to every trajectory of the group. Such identical groups, once
// the judge answered for them, are counted (Scorer.Identical) for one
// warning a run; each is logged at debug level.
//
// Token budget (BuildWithin): when the prompt exceeds Budget.Tokens,
// counted with the judge's tokenizer or estimated from bytes, long texts
// are cut in the middle, tool results first, each cut leaving a marker
// that says how many tokens went; ErrPromptTooLong when even that cannot
// make it fit. docs/ruler.md describes the whole prompt and how it differs
// from ART's RULER.
package ruler
