package ruler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge"
)

// PromptVersion names the prompt layout built here. Change it whenever the
// text or layout changes, so cached verdicts of the old prompt are not
// reused for the new one.
//
// ruler-v3: the tools offered are shown (<available_tools>), a single
// attempt is scored on an absolute scale, and texts may be cut to a token
// budget with a marker and a note in the system message.
//
// Trajectories with additional histories (shown in <additional_history>
// blocks, with a note in the system message) were never judged by an
// earlier version, and prompts of trajectories without them are unchanged,
// so showing them needed no new version: the cache is keyed by the text too.
const PromptVersion = "ruler-v3"

// DefaultRubric is used when the user gives none.
const DefaultRubric = `- An attempt that reaches the goal must score clearly higher than any attempt that does not.
- Between attempts that both reach the goal, the more direct one (fewer wasted turns, errors or needless tool calls) scores higher.
- Keep score gaps in proportion to quality gaps: attempts of nearly equal quality get nearly equal scores.
- An attempt that does not reach the goal still earns partial credit for real progress toward it.`

// relativeTemplate is the system message for two or more attempts; its
// verbs are the cut note (cutNote or "") and the rubric.
const relativeTemplate = `You are grading several attempts by an AI agent at one and the same task. Work out the task from the system and user messages the agent received, and from the tools it could call (listed in <available_tools> when it had any).

Compare the attempts with each other and give each a score between 0 and 1 that reflects how well it did relative to the others, following the rubric below. Also give each a short explanation (one or two sentences).
%s
Answer with a JSON object only, with one entry per trajectory id:
{"scores": {"1": {"explanation": "...", "score": 0.0}, ...}}

Rubric:
%s`

// absoluteTemplate is the system message when the judge sees one attempt:
// a group of one, or a group whose attempts are all identical.
const absoluteTemplate = `You are grading one attempt by an AI agent at a task. Work out the task from the system and user messages the agent received, and from the tools it could call (listed in <available_tools> when it had any).

There is no other attempt to compare it with, so score it on an absolute scale between 0 and 1, following the rubric below as far as it applies to a single attempt: 1 for a goal reached fully and directly, 0 for no real progress, and values in between for partial progress or for a goal reached with wasted effort. Also give a short explanation (one or two sentences).
%s
Answer with a JSON object only:
{"scores": {"1": {"explanation": "...", "score": 0.0}}}

Rubric:
%s`

// historyNote is added to the system message when a trajectory shown has
// additional histories.
const historyNote = `
Some attempts include additional histories, each in an <additional_history> block after the attempt's main messages: other conversations the agent held during the same attempt, such as a sub-agent's work or the turns that a summary replaced, each with the tools it could call there. Judge each attempt on all of its histories together.
`

// cutNote is added to the system message when texts were cut to fit the
// judge's context; marker is the mark left where a cut was made.
const (
	cutNote = `
Some long texts were shortened to fit your context window. Each cut is marked where it was made, like [… 120 of 900 tokens cut to fit the judge's context …]. The agent saw the whole text: do not count a cut against it.
`
	marker = "[… %d of %d tokens cut to fit the judge's context …]"
)

// Prompt is an assembled judge prompt for one group.
type Prompt struct {
	System string
	User   string
	// IDs are the ids shown to the judge, "1".."N", or just "1" when the
	// judge sees one attempt (then Absolute is true).
	IDs []string
	// Identical is true when the group has two or more trajectories and
	// all are the same: one is shown and its score given to all.
	Identical bool
	// Absolute is true when one attempt is shown (a group of one, or an
	// identical group) and the judge scores it on an absolute scale.
	Absolute bool
	// SharedPrefix is the number of leading messages all trajectories
	// share, shown once.
	SharedPrefix int
	// Tokens is the prompt's size (system + user) as the budget counted
	// it; 0 when the prompt was built without a budget.
	Tokens int
	// Cuts is the number of texts shortened to fit the budget.
	Cuts int
}

// Request turns the prompt into a judge request for model.
func (p Prompt) Request(model string) judge.Request {
	return judge.Request{Model: model, PromptVersion: PromptVersion, System: p.System, User: p.User, IDs: p.IDs}
}

// judgeView is what the judge sees of one chat turn: the message in the
// OpenAI chat shape (format/chatmsg) with its text only: no content
// parts, no reasoning, none of Hone's fields (token ids, logprobs, ...).
func judgeView(m *trajectory.Message) chatmsg.Message {
	return chatmsg.Message{Role: m.Role, Name: m.Name, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
}

// marshal renders v as compact JSON without HTML escaping, so the judge
// reads "<" and "&" as they were written.
func marshal(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only strings, messages holding no raw JSON and tools whose
		// parameters trajectory.Validate checked are encoded here.
		panic(fmt.Sprintf("ruler: encode judge view: %v", err))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// layout is what a prompt shows, before any text is cut.
type layout struct {
	rubric    string
	absolute  bool
	identical bool
	// tools is the <available_tools> block shown once ("" when no
	// trajectory had tools, or when they differ: then blockTools holds
	// each shown trajectory's own).
	tools      string
	blockTools []string
	shared     []chatmsg.Message // the common prefix, shown once
	blocks     [][]chatmsg.Message
	// histories are each block's additional histories, shown after its
	// messages, in order.
	histories [][]history
	ids       []string
}

// history is what the judge sees of one additional history.
type history struct {
	tools string // its <available_tools> JSON; "" when it had none
	msgs  []chatmsg.Message
}

// judgeHistories returns the judge's view of a trajectory's additional
// histories, and a rendering of them that two trajectories share exactly
// when the judge would see the same.
func judgeHistories(t *trajectory.Trajectory) ([]history, string) {
	var hs []history
	var key strings.Builder
	for k := range t.AdditionalHistories {
		h := &t.AdditionalHistories[k]
		var v history
		if len(h.Tools) > 0 {
			v.tools = marshal(h.Tools)
		}
		for j := range h.Messages {
			v.msgs = append(v.msgs, judgeView(&h.Messages[j]))
		}
		hs = append(hs, v)
		fmt.Fprintf(&key, "%d\x00%s\x00%s\x00", k, v.tools, marshal(v.msgs))
	}
	return hs, key.String()
}

func newLayout(trajs []trajectory.Trajectory, rubric string) *layout {
	if strings.TrimSpace(rubric) == "" {
		rubric = DefaultRubric
	}
	l := &layout{rubric: strings.TrimSpace(rubric)}
	views := make([][]chatmsg.Message, len(trajs))
	rendered := make([][]string, len(trajs))
	tools := make([]string, len(trajs))
	hists := make([][]history, len(trajs))
	histKeys := make([]string, len(trajs))
	sameTools, anyTools, sameHists := true, false, true
	for i := range trajs {
		hists[i], histKeys[i] = judgeHistories(&trajs[i])
		sameHists = sameHists && histKeys[i] == histKeys[0]
		for j := range trajs[i].Messages {
			v := judgeView(&trajs[i].Messages[j])
			views[i] = append(views[i], v)
			rendered[i] = append(rendered[i], marshal(v))
		}
		tools[i] = "[]"
		if len(trajs[i].Tools) > 0 {
			tools[i], anyTools = marshal(trajs[i].Tools), true
		}
		sameTools = sameTools && tools[i] == tools[0]
	}
	prefix := commonPrefix(rendered)
	identical := true
	for _, r := range rendered {
		if len(r) != prefix {
			identical = false
		}
	}
	// Trajectories with the same messages but different tools were not
	// in the same situation: they are compared, not merged. Nor are ones
	// whose additional histories differ.
	identical = identical && sameTools && sameHists
	if identical || len(trajs) == 1 {
		// One attempt to show, whole: the judge scores it on its own.
		l.absolute, l.identical = true, len(trajs) > 1
		l.ids, l.blocks = []string{"1"}, [][]chatmsg.Message{views[0]}
		l.histories = hists[:1]
		if anyTools {
			l.tools = tools[0]
		}
		return l
	}
	l.shared = views[0][:prefix]
	l.histories = hists
	for i := range views {
		l.ids = append(l.ids, strconv.Itoa(i+1))
		l.blocks = append(l.blocks, views[i][prefix:])
	}
	switch {
	case anyTools && sameTools:
		l.tools = tools[0]
	case anyTools:
		l.blockTools = tools
	}
	return l
}

// render writes the prompt, cutting texts with c (nil: none).
func (l *layout) render(c *cutter) Prompt {
	p := Prompt{IDs: l.ids, Identical: l.identical, Absolute: l.absolute, SharedPrefix: len(l.shared)}
	if c != nil {
		c.cuts = 0
	}
	var b strings.Builder
	if l.tools != "" {
		fmt.Fprintf(&b, "The agent could call these tools:\n<available_tools>\n%s\n</available_tools>\n\n", l.tools)
	}
	if len(l.shared) > 0 {
		b.WriteString("All trajectories begin with these messages:\n<shared_context>\n")
		b.WriteString(marshal(c.views(l.shared)))
		b.WriteString("\n</shared_context>\n\nEach trajectory continues as follows.\n\n")
	}
	if l.absolute {
		b.WriteString("Trajectory:\n\n")
	} else {
		b.WriteString("Trajectories:\n\n")
	}
	for i, msgs := range l.blocks {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "<trajectory id=%q>\n", l.ids[i])
		if l.blockTools != nil {
			fmt.Fprintf(&b, "<available_tools>\n%s\n</available_tools>\n", l.blockTools[i])
		}
		b.WriteString(marshal(c.views(msgs)))
		for k, h := range l.histories[i] {
			fmt.Fprintf(&b, "\n<additional_history index=\"%d\">\n", k+1)
			if h.tools != "" {
				fmt.Fprintf(&b, "<available_tools>\n%s\n</available_tools>\n", h.tools)
			}
			b.WriteString(marshal(c.views(h.msgs)))
			b.WriteString("\n</additional_history>")
		}
		b.WriteString("\n</trajectory>")
	}
	p.User = b.String()
	note := ""
	if l.hasHistories() {
		note = historyNote
	}
	if c != nil && c.cuts > 0 {
		note, p.Cuts = note+cutNote, c.cuts
	}
	tmpl := relativeTemplate
	if l.absolute {
		tmpl = absoluteTemplate
	}
	p.System = fmt.Sprintf(tmpl, note, l.rubric)
	return p
}

// hasHistories reports whether a block shown has additional histories.
func (l *layout) hasHistories() bool {
	for _, hs := range l.histories {
		if len(hs) > 0 {
			return true
		}
	}
	return false
}

// Build assembles the judge prompt for a group's trajectories, with no
// token budget. rubric "" means DefaultRubric.
func Build(trajs []trajectory.Trajectory, rubric string) Prompt {
	return newLayout(trajs, rubric).render(nil)
}

// commonPrefix returns how many leading messages every list shares.
func commonPrefix(lists [][]string) int {
	if len(lists) == 0 {
		return 0
	}
	n := 0
	for ; n < len(lists[0]); n++ {
		for _, l := range lists[1:] {
			if n >= len(l) || l[n] != lists[0][n] {
				return n
			}
		}
	}
	return n
}
