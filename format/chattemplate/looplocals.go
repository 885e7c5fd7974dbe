package chattemplate

import (
	"maps"
	"slices"
	"strings"
)

// jinja2 clears what a {% for %} body assigns at the end of each
// iteration: the next one reads the name's value from outside the loop
// again (or none), so `{% set first = true %}{% for … %}{% if not first
// %}, {% endif %}…{% set first = false %}{% endfor %}` writes no comma at
// all. The engine keeps one scope for the whole loop, so the name kept
// the last iteration's value: vLLM's Gemma 3 pythonic tool template
// rendered the arguments of a call as `a=1, b=2` where jinja2 writes
// `a=1b=2`, a prompt the model is never served. The rewriter (openBody)
// saves each such name before the loop (loopOuterPrefix) and sets it back
// at the start of every iteration. Only the names an iteration may read
// before it assigns them need it: a body that always assigns a name
// first (Qwen's `{% set content = … %}`) gets no extra tags, so its
// renderings cost what they did.

// loopOuterPrefix starts the variable that holds, for the loop whose body
// region is ID, a name's value outside the loop: __hone_outer_ID_name.
const loopOuterPrefix = "__hone_outer_"

// loopScan finds the names each loop must set back (loopResets).
type loopScan struct {
	src    string
	segs   []segment
	resets map[int][]string
	// elses: the names each loop's {% else %} assigns (loopResets).
	elses map[int][]string
}

// loopFlow follows one scope (a loop body, a macro's, the template's) in
// the order its tags run: the names surely assigned by now, those read
// where they may not be, and all it assigns. Reads inside a nested scope
// are reads of this one too (parent), where the nested one does not
// assign the name first.
type loopFlow struct {
	assigned map[string]bool
	early    map[string]bool
	sets     map[string]bool
	parent   *loopFlow
}

func newLoopFlow(parent *loopFlow, bound []string) *loopFlow {
	f := &loopFlow{assigned: map[string]bool{}, early: map[string]bool{}, sets: map[string]bool{}, parent: parent}
	for _, n := range bound {
		f.assigned[n] = true
	}
	return f
}

func (f *loopFlow) read(name string) {
	if f.assigned[name] {
		return
	}
	f.early[name] = true
	if f.parent != nil {
		f.parent.read(name)
	}
}

func (f *loopFlow) assign(names []string) {
	for _, n := range names {
		f.assigned[n] = true
		f.sets[n] = true
	}
}

// readCode counts every name in code as read, but an attribute's name
// (after a dot).
func (f *loopFlow) readCode(code string) {
	prev := ""
	for _, tok := range codeTokens(code) {
		if isIdent(tok) && prev != "." {
			f.read(tok)
		}
		prev = tok
	}
}

// loopResets gives, by the offset of each {% for %} tag's content, the
// names its body assigns that an iteration may read before assigning
// them, and the names its {% else %} assigns, each in order; loops with
// none are left out. jinja2 runs the else in a frame of its own, so what
// it assigns is gone after {% endfor %}; the engine runs it in the
// scope around the loop, so the rewriter saves those names before the
// loop too and sets them back after it.
func loopResets(src string, segs []segment) (resets, elses map[int][]string) {
	l := &loopScan{src: src, segs: segs, resets: map[int][]string{}, elses: map[int][]string{}}
	l.seq(0, newLoopFlow(nil, nil))
	return l.resets, l.elses
}

// seq follows the tags from segment i in flow f up to one that closes or
// divides the block they are in (endfor, else, elif, endif, ...), and
// returns that segment's index and keyword (len(segs) and "" at the end).
func (l *loopScan) seq(i int, f *loopFlow) (int, string) {
	for i < len(l.segs) {
		s := l.segs[i]
		if s.kind == segExpr {
			f.readCode(l.src[s.from:s.to])
		}
		if s.kind != segStmt {
			i++
			continue
		}
		content := l.src[s.from:s.to]
		kw := keyword(content)
		switch kw {
		case "endfor", "else", "elif", "endif", "endmacro", "endcall", "endset", "endfilter", "endgeneration", "endwith":
			return i, kw
		case "set":
			i = l.set(i, f, content)
		case "if":
			i = l.ifBlock(i, f, content)
		case "for":
			i = l.forBlock(i, f, s, content)
		case "macro", "call", "with", "filter", "generation":
			// Each body is a scope of its own (jinja2's filter block is an
			// inner frame, transformers' generation a call block), and
			// its end tag must not be taken for the end of this one.
			inner := newLoopFlow(f, assignedNames(kw, content))
			f.readCode(strings.TrimPrefix(strings.TrimSpace(content), kw))
			i, _ = l.seq(i+1, inner)
			i++
		case "raw":
			for i++; i < len(l.segs) && !(l.segs[i].kind == segStmt && keyword(l.src[l.segs[i].from:l.segs[i].to]) == "endraw"); i++ {
			}
			i++
		default:
			// break, continue and the rest: what
			// they hold runs here, in this scope.
			f.readCode(strings.TrimPrefix(strings.TrimSpace(content), kw))
			i++
		}
	}
	return i, ""
}

// set follows {% set %} at segment i: the value is read, then the names
// (not ns.attr) are assigned; a block set's body runs before.
func (l *loopScan) set(i int, f *loopFlow, content string) int {
	rest := strings.TrimPrefix(strings.TrimSpace(content), "set")
	target, value, isAssign := strings.Cut(rest, "=")
	if !isAssign || strings.HasPrefix(value, "=") {
		target, _, _ = strings.Cut(rest, "|")
		i, _ = l.seq(i+1, f)
	} else {
		f.readCode(value)
	}
	var names []string
	for _, item := range strings.Split(strings.NewReplacer("(", "", ")", "").Replace(target), ",") {
		item = strings.TrimSpace(item)
		if ns, _, dotted := strings.Cut(item, "."); dotted {
			f.read(ns)
		} else if isName(item) {
			names = append(names, item)
		}
	}
	f.assign(names)
	return i + 1
}

// ifBlock follows an {% if %} at segment i: after it, a name is surely
// assigned only where every branch, or the way around them when there is
// no else, assigns it.
func (l *loopScan) ifBlock(i int, f *loopFlow, content string) int {
	f.readCode(strings.TrimPrefix(strings.TrimSpace(content), "if"))
	before := f.assigned
	var after map[string]bool
	hasElse := false
	for {
		f.assigned = copyNames(before)
		end, kw := l.seq(i+1, f)
		after = intersectNames(after, f.assigned)
		i = end
		if kw == "elif" {
			f.assigned = before
			f.readCode(strings.TrimPrefix(strings.TrimSpace(l.src[l.segs[i].from:l.segs[i].to]), "elif"))
			continue
		}
		if kw != "else" {
			break
		}
		hasElse = true
		f.assigned = copyNames(before)
		i, _ = l.seq(i+1, f)
		after = intersectNames(after, f.assigned)
		break
	}
	if !hasElse {
		after = intersectNames(after, before)
	}
	f.assigned = after
	return i + 1
}

// forBlock follows a {% for %} at segment i: its body is a scope of its
// own, whose loop variables and loop are bound, and its else runs in f
// (or not at all).
func (l *loopScan) forBlock(i int, f *loopFlow, s segment, content string) int {
	targets := assignedNames("for", content)
	f.readCode(strings.TrimPrefix(strings.TrimSpace(content), "for"))
	body := newLoopFlow(f, append(slices.Clone(targets), "loop"))
	end, kw := l.seq(i+1, body)
	var names []string
	for n := range body.sets {
		if body.early[n] && !slices.Contains(targets, n) && n != "loop" {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		l.resets[s.from] = names
	}
	if kw == "else" {
		// A scope of its own, as in jinja2: what it reads before
		// assigning is read from f.
		inner := newLoopFlow(f, nil)
		end, _ = l.seq(end+1, inner)
		if len(inner.sets) > 0 {
			l.elses[s.from] = slices.Sorted(maps.Keys(inner.sets))
		}
	}
	return end + 1
}

func copyNames(m map[string]bool) map[string]bool {
	c := make(map[string]bool, len(m))
	for k := range m {
		c[k] = true
	}
	return c
}

// intersectNames is the names in both; a nil acc stands for all names.
func intersectNames(acc, m map[string]bool) map[string]bool {
	if acc == nil {
		return copyNames(m)
	}
	out := map[string]bool{}
	for k := range acc {
		if m[k] {
			out[k] = true
		}
	}
	return out
}
