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
const PromptVersion = "ruler-v2"

// DefaultRubric is used when the user gives none.
const DefaultRubric = `- An attempt that reaches the goal must score clearly higher than any attempt that does not.
- Between attempts that both reach the goal, the more direct one (fewer wasted turns, errors or needless tool calls) scores higher.
- Keep score gaps in proportion to quality gaps: attempts of nearly equal quality get nearly equal scores.
- An attempt that does not reach the goal still earns partial credit for real progress toward it.`

const systemTemplate = `You are grading several attempts by an AI agent at one and the same task. Work out the task from the system and user messages the agent received.

Compare the attempts with each other and give each a score between 0 and 1 that reflects how well it did relative to the others, following the rubric below. Also give each a short explanation (one or two sentences).

Answer with a JSON object only, with one entry per trajectory id:
{"scores": {"1": {"explanation": "...", "score": 0.0}, ...}}

Rubric:
%s`

// Prompt is an assembled judge prompt for one group.
type Prompt struct {
	System string
	User   string
	// IDs are the ids shown to the judge, "1".."N", or just "1" when all
	// trajectories are identical (then Identical is true).
	IDs       []string
	Identical bool
	// SharedPrefix is the number of leading messages all trajectories
	// share, shown once.
	SharedPrefix int
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
		// Only strings and messages holding no raw JSON are encoded here.
		panic(fmt.Sprintf("ruler: encode judge view: %v", err))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// Build assembles the judge prompt for a group's trajectories. rubric ""
// means DefaultRubric. It does not check the group size; Scorer does.
func Build(trajs []trajectory.Trajectory, rubric string) Prompt {
	if strings.TrimSpace(rubric) == "" {
		rubric = DefaultRubric
	}
	views := make([][]chatmsg.Message, len(trajs))
	rendered := make([][]string, len(trajs))
	for i := range trajs {
		for j := range trajs[i].Messages {
			v := judgeView(&trajs[i].Messages[j])
			views[i] = append(views[i], v)
			rendered[i] = append(rendered[i], marshal(v))
		}
	}
	prefix := commonPrefix(rendered)
	identical := true
	for _, r := range rendered {
		if len(r) != prefix {
			identical = false
		}
	}
	p := Prompt{System: fmt.Sprintf(systemTemplate, strings.TrimSpace(rubric)), SharedPrefix: prefix}
	var b strings.Builder
	if identical {
		// Nothing to compare: show one trajectory whole and let its score
		// stand for all.
		p.Identical = true
		p.SharedPrefix = 0
		p.IDs = []string{"1"}
		b.WriteString("Trajectories:\n\n")
		writeBlock(&b, "1", views[0])
		p.User = b.String()
		return p
	}
	if prefix > 0 {
		b.WriteString("All trajectories begin with these messages:\n<shared_context>\n")
		b.WriteString(marshal(views[0][:prefix]))
		b.WriteString("\n</shared_context>\n\nEach trajectory continues as follows.\n\n")
	}
	b.WriteString("Trajectories:\n\n")
	for i := range views {
		id := strconv.Itoa(i + 1)
		p.IDs = append(p.IDs, id)
		if i > 0 {
			b.WriteString("\n\n")
		}
		writeBlock(&b, id, views[i][prefix:])
	}
	p.User = b.String()
	return p
}

func writeBlock(b *strings.Builder, id string, msgs []chatmsg.Message) {
	if msgs == nil {
		msgs = []chatmsg.Message{}
	}
	fmt.Fprintf(b, "<trajectory id=%q>\n%s\n</trajectory>", id, marshal(msgs))
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
