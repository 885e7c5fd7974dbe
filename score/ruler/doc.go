// Package ruler owns RULER scoring: one judge call per group, in which an
// LLM judge compares the group's attempts at one scenario with each other
// and gives each a score in [0,1] and a short explanation.
//
// Prompt assembly (Build): every trajectory's messages are rendered as
// OpenAI-shaped JSON without token ids, logprobs or timings (the judge has
// no use for them and they can overflow its context). The longest prefix
// of messages that all trajectories share (usually the system prompt and
// the first user turn) is shown once, inside <shared_context>; then each
// trajectory's remainder — assistant turns, tool calls and tool results —
// inside <trajectory id="N">, with N counting from 1. The system message
// carries the instructions and the rubric (DefaultRubric, or the user's).
// When every trajectory is identical the judge sees one of them, and its
// single score is given to all.
//
// A group of one cannot be ranked: RULER's scores are relative, so the
// scorer reports that as a judge error (ErrGroupOfOne) and leaves the
// policy — fail, skip or mark — to the caller.
package ruler
