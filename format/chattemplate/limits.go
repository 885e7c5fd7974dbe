package chattemplate

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ardanlabs/jinja"
)

// Limits bound one rendering. A chat template comes with the model folder
// and runs on every request, so a template that loops, recurses or grows a
// value without end must fail with a clear error instead of taking the
// process down. The zero value (and any zero field) means the default.
//
// The defaults are far above what real chat templates need for any
// conversation that fits a model's context: Qwen3's template spends about
// 400 steps per message and writes little more than the messages' text.
type Limits struct {
	// Steps bounds the work of one rendering. Every run of a loop body,
	// macro body or {% call %} body costs the number of tokens and tags
	// in it (nested bodies count their own runs), and every item that
	// range() makes or that measuring a value for ValueBytes visits costs
	// one. Default 10,000,000 (about a second of the engine's time).
	Steps int64
	// OutputBytes bounds the text a rendering produces, counting the text
	// macros and {% set %} blocks capture and what tojson writes as well
	// as the final output. Default 64 MiB.
	OutputBytes int64
	// ValueBytes bounds one value that the template prints or assigns
	// with {% set %}: its printed length plus 24 bytes per list item or
	// dict entry. Default 16 MiB.
	ValueBytes int64
	// MacroDepth bounds nested macro calls. Default 100.
	MacroDepth int
}

// Defaults of Limits.
const (
	DefaultSteps       = 10_000_000
	DefaultOutputBytes = 64 << 20
	DefaultValueBytes  = 16 << 20
	DefaultMacroDepth  = 100
)

// maxValueDepth bounds how deeply nested a value may be when it is
// measured or written as JSON: encoding/json's own nesting limit, so any
// value decoded from a request passes, while a list that contains itself
// is caught.
const maxValueDepth = 10000

// perItem is what a list item or dict entry adds to a value's size beyond
// its printed text: the engine's Value is 24 bytes.
const perItem = 24

func (l Limits) withDefaults() Limits {
	if l.Steps <= 0 {
		l.Steps = DefaultSteps
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = DefaultOutputBytes
	}
	if l.ValueBytes <= 0 {
		l.ValueBytes = DefaultValueBytes
	}
	if l.MacroDepth <= 0 {
		l.MacroDepth = DefaultMacroDepth
	}
	return l
}

// ErrLimit is matched by errors.Is for every *LimitError.
var ErrLimit = errors.New("chat template limit exceeded")

// ErrEngine is matched by errors.Is when the template engine itself failed
// (a panic inside it) on a template: a fault of the template, not of the
// conversation.
var ErrEngine = errors.New("chat template engine failure")

// LimitError is a rendering stopped by one of its Limits (or by a value
// that contains itself). It is the template's fault: no conversation that
// a sane template renders comes near the limits.
type LimitError struct {
	Template string // template name: "default", "tool_use", ...
	Source   string // where the template came from (a file), "" if not known
	Limit    string // "steps", "output bytes", "value bytes", "macro depth" or "value depth"
	Max      int64  // the limit
	Detail   string // what the template did
}

func (e *LimitError) Error() string {
	where := fmt.Sprintf("chat template %q", e.Template)
	if e.Source != "" {
		where += " (" + e.Source + ")"
	}
	return fmt.Sprintf("%s stopped at its %s limit of %d: %s; the model folder's chat template is at fault", where, e.Limit, e.Max, e.Detail)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// Names of the callables that instrument() writes into templates.
const (
	hookLoop  = "__hone_loop"
	hookEnter = "__hone_enter"
	hookLeave = "__hone_leave"
	// hookLeaveWith ends the level a macro's default value entered and
	// passes the value through (guardMacroDefaults).
	hookLeaveWith = "__hone_leave_with"
	hookOut       = "__hone_out"
	hookSet       = "__hone_set"
)

// budget is one rendering's account. The hooks run on the rendering's
// goroutine only. err is sticky: the engine drops errors in a few places
// (slice bounds), so once a limit is hit every later hook fails again and
// Render reports it even if the engine finished.
type budget struct {
	ctx     context.Context
	lim     Limits
	regions []region
	name    string
	source  string

	steps, output int64
	depth         int
	err           error
}

func (b *budget) fail(limit string, max int64, format string, args ...any) error {
	if b.err == nil {
		b.err = &LimitError{Template: b.name, Source: b.source, Limit: limit, Max: max, Detail: fmt.Sprintf(format, args...)}
	}
	return b.err
}

// check is every hook's common part: a limit already hit, the context,
// and the step and output totals.
func (b *budget) check() error {
	if b.err != nil {
		return b.err
	}
	if err := b.ctx.Err(); err != nil {
		b.err = fmt.Errorf("chat template %q: rendering stopped: %w", b.name, err)
		return b.err
	}
	if b.steps > b.lim.Steps {
		return b.fail("steps", b.lim.Steps, "it loops or recurses too long (a step is a token evaluated in a loop or macro body)")
	}
	if b.output > b.lim.OutputBytes {
		return b.fail("output bytes", b.lim.OutputBytes, "it writes more text than that")
	}
	return nil
}

// callables returns the hooks as template variables.
func (b *budget) callables() map[string]jinja.Value {
	calls := map[string]jinja.Value{
		hookLoop:      jinja.NewCallable(hookLoop, b.loop),
		hookEnter:     jinja.NewCallable(hookEnter, b.enter),
		hookLeave:     jinja.NewCallable(hookLeave, b.leave),
		hookLeaveWith: jinja.NewCallable(hookLeaveWith, b.leaveWith),
		hookOut:       jinja.NewCallable(hookOut, b.out),
		hookSet:       jinja.NewCallable(hookSet, b.set),
		"range":       jinja.NewCallable("range", b.rangeFn),
		tojsonName:    jinja.NewCallable("tojson", b.tojson),
		trimName:      jinja.NewCallable("trim", trimFilter),
		stringName:    jinja.NewCallable("string", b.str),
		mulName:       jinja.NewCallable("*", b.mul),
		addName:       jinja.NewCallable("+", pyAddSub(false, b.repr)),
		subName:       jinja.NewCallable("-", pyAddSub(true, b.repr)),
	}
	return calls
}

var empty = jinja.NewString("")

// loop charges one run of a loop or {% call %} body.
// A for loop's body passes its loop object too, which gets the
// attributes the engine lacks (addLoopAttrs).
func (b *budget) loop(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 2 && args[1].IsDict() {
		addLoopAttrs(args[1].AsDict())
	}
	if len(args) >= 1 && args[0].IsInt() {
		if id := args[0].AsInt(); id >= 0 && id < int64(len(b.regions)) {
			b.steps += b.regions[id].steps
			b.output += b.regions[id].text
		}
	}
	return empty, b.check()
}

// enter charges one macro call and checks the nesting. A macro left by an
// error ends the whole rendering, so leave needs no unwinding.
func (b *budget) enter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	b.depth++
	if b.depth > b.lim.MacroDepth {
		return empty, b.fail("macro depth", int64(b.lim.MacroDepth), "macros call each other more than %d deep, a recursion without end", b.lim.MacroDepth)
	}
	return b.loop(args, kwargs)
}

func (b *budget) leave(_ []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	b.depth--
	return empty, b.check()
}

// leaveWith ends a macro default's level and gives its value.
func (b *budget) leaveWith(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	b.depth--
	if len(args) != 1 {
		return jinja.Undefined(), b.check()
	}
	return args[0], b.check()
}

// out measures a value a {{ }} prints and passes it through unchanged,
// except a float, which it gives as the text Python's str() makes of it.
func (b *budget) out(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return empty, b.check()
	}
	m, err := b.measure(args[0], nil)
	if err != nil {
		return jinja.Undefined(), err
	}
	b.output += m.printed
	return printed(args[0]), b.check()
}

// printed is the value a {{ }} prints, as jinja2 prints it: a float, None,
// a list or a dict as Python's str() writes it (the engine prints floats
// with %g, 3.0 as "3", None as "", and floats and strings inside lists and
// dicts otherwise than Python's repr: pythonStr), anything else unchanged.
func printed(v jinja.Value) jinja.Value {
	if v.IsFloat() || v.IsNone() || v.IsList() || v.IsDict() {
		return jinja.NewString(pythonStr(v))
	}
	return v
}

// str is the string filter: Python's str() of the value (pythonStr),
// measured first, as the engine's string filter prints lists and dicts
// differently and recurses without end through one that contains itself.
func (b *budget) str(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return empty, b.check()
	}
	if _, err := b.measure(args[0], nil); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(pythonStr(args[0])), b.check()
}

// repr is Python's str() of v (pythonStr), measured first, as str does.
func (b *budget) repr(v jinja.Value) (string, error) {
	if _, err := b.measure(v, nil); err != nil {
		return "", err
	}
	return pythonStr(v), nil
}

// mul is the * operator (pyMul), which stops at the value bytes limit
// before it repeats a string or list past it.
func (b *budget) mul(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	v, err := pyMul(args, func(what string, seq jinja.Value, count int64) error {
		unit, nodes := repeatUnit(seq, b.lim.ValueBytes)
		b.steps += nodes
		if repeatFits(b.lim.ValueBytes, unit, count) {
			return nil
		}
		return b.fail("value bytes", b.lim.ValueBytes, "it repeats a %s of %d bytes %d times with *", what, unit, count)
	})
	if err != nil {
		return jinja.Undefined(), err
	}
	return v, b.check()
}

// set measures a value a {% set %} assigns and passes it through; for
// {% set ns.a = value %} the second argument is ns, which value must not
// contain (the engine prints a cycle by recursing until the stack
// overflows).
func (b *budget) set(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.None(), b.check()
	}
	var ns *jinja.Dict
	if len(args) > 1 && args[1].IsDict() {
		ns = args[1].AsDict()
	}
	if _, err := b.measure(args[0], ns); err != nil {
		return jinja.Undefined(), err
	}
	return args[0], b.check()
}

// measure walks v, charging a step per value, and checks its size and
// depth against the limits.
func (b *budget) measure(v jinja.Value, ns *jinja.Dict) (*meter, error) {
	m := &meter{max: b.lim.ValueBytes, ns: ns}
	m.walk(v, false, 0)
	b.steps += m.nodes
	switch m.stop {
	case stopSize:
		return nil, b.fail("value bytes", b.lim.ValueBytes, "it builds a value larger than that (a string or list that keeps growing)")
	case stopDepth:
		return nil, b.fail("value depth", maxValueDepth, "it builds a value nested deeper than that (a list or dict that contains itself)")
	case stopCycle:
		return nil, b.fail("value depth", maxValueDepth, "{%% set %%} would put a namespace inside itself, which the engine cannot print")
	}
	return m, nil
}

type stopReason int

const (
	stopNone stopReason = iota
	stopSize
	stopDepth
	stopCycle
)

// meter measures a value as the engine prints it: the text of a top-level
// value ({{ x }}), and Python's repr for what is inside a list or dict.
type meter struct {
	max     int64
	ns      *jinja.Dict
	printed int64
	nodes   int64
	stop    stopReason
}

func (m *meter) add(n int64) bool {
	m.printed += n
	if m.printed+perItem*m.nodes > m.max {
		m.stop = stopSize
		return false
	}
	return true
}

func (m *meter) walk(v jinja.Value, nested bool, depth int) bool {
	m.nodes++
	if depth > maxValueDepth {
		m.stop = stopDepth
		return false
	}
	switch {
	case v.IsList():
		items := v.AsList().Items
		if !m.add(2 + 2*int64(max(len(items)-1, 0))) {
			return false
		}
		for _, it := range items {
			if !m.walk(it, true, depth+1) {
				return false
			}
		}
		return true
	case v.IsDict():
		d := v.AsDict()
		if d == m.ns {
			m.stop = stopCycle
			return false
		}
		if !m.add(2 + 2*int64(max(len(d.Keys)-1, 0))) {
			return false
		}
		for _, k := range d.Keys {
			if !m.add(int64(len(k))+4) || !m.walk(d.Data[k], true, depth+1) {
				return false
			}
		}
		return true
	}
	return m.add(scalarLen(v, nested))
}

// scalarLen is the printed length of a value that is not a list or dict.
func scalarLen(v jinja.Value, nested bool) int64 {
	switch {
	case v.IsString():
		if nested {
			return int64(len(v.AsString())) + 2
		}
		return int64(len(v.AsString()))
	case v.IsInt():
		return int64(len(strconv.FormatInt(v.AsInt(), 10)))
	case v.IsFloat():
		return int64(len(strconv.FormatFloat(v.AsFloat(), 'g', -1, 64)))
	case v.IsBool():
		return 5
	case v.IsNone():
		return 4
	case !nested:
		return 0
	case v.IsCallable():
		return int64(len(v.AsCallable().Name)) + 11
	}
	return 9 // Undefined
}

// rangeFn replaces the engine's range, which builds its whole list at once
// (range(10**12) runs until memory is gone): it charges a step per item
// and refuses more items than the steps left, before building anything.
// Otherwise it behaves as the engine's: arguments are converted to
// integers the same way, and the same errors come out.
func (b *budget) rangeFn(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	switch len(args) {
	case 1:
		stop = toInt64(args[0])
	case 2:
		start, stop = toInt64(args[0]), toInt64(args[1])
	case 3:
		start, stop, step = toInt64(args[0]), toInt64(args[1]), toInt64(args[2])
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1-3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	n := rangeLen(start, stop, step)
	if left := b.lim.Steps - b.steps; n > uint64(max(left, 0)) {
		return jinja.Undefined(), b.fail("steps", b.lim.Steps, "range(%d, %d, %d) has %d items, more than the %d steps left", start, stop, step, n, max(left, 0))
	}
	if n > uint64(b.lim.ValueBytes/perItem) {
		return jinja.Undefined(), b.fail("value bytes", b.lim.ValueBytes, "range(%d, %d, %d) has %d items, a list larger than that", start, stop, step, n)
	}
	b.steps += int64(n)
	items := make([]jinja.Value, 0, n)
	for i := range int64(n) {
		items = append(items, jinja.NewInt(start+i*step))
	}
	if n == 0 {
		items = nil // the engine returns an empty list as nil
	}
	return jinja.NewList(items), b.check()
}

// rangeLen is the number of items of range(start, stop, step), computed
// without overflow.
func rangeLen(start, stop, step int64) uint64 {
	if step > 0 && start < stop {
		return (uint64(stop-start)-1)/uint64(step) + 1
	}
	if step < 0 && start > stop {
		return (uint64(start-stop)-1)/(uint64(-(step+1))+1) + 1
	}
	return 0
}

// toInt64 converts a range argument to an integer as the engine does:
// floats truncated, booleans 0 or 1, strings read with %d, anything else 0.
func toInt64(v jinja.Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsFloat():
		return int64(v.AsFloat())
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
	case v.IsString():
		var n int64
		fmt.Sscanf(v.AsString(), "%d", &n)
		return n
	}
	return 0
}

// tojson is the tojson filter with the rendering's limits: the text it
// writes counts as output and may not pass ValueBytes.
func (b *budget) tojson(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if err := b.check(); err != nil {
		return jinja.Undefined(), err
	}
	v, err := tojsonLimited(args, kwargs, b.lim.ValueBytes)
	if errors.Is(err, errJSONTooBig) {
		return jinja.Undefined(), b.fail("value bytes", b.lim.ValueBytes, "tojson writes more than that")
	}
	if errors.Is(err, errJSONTooDeep) {
		return jinja.Undefined(), b.fail("value depth", maxValueDepth, "tojson meets a value nested deeper than that (a list or dict that contains itself)")
	}
	if err != nil {
		return jinja.Undefined(), err
	}
	b.output += int64(len(v.AsString()))
	b.steps++
	return v, b.check()
}
