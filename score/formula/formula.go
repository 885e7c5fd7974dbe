package formula

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/parser/lexer"
	"github.com/expr-lang/expr/vm"

	"github.com/hone-rl/hone/format/trajectory"
)

// Scorer evaluates one expression per trajectory. It satisfies
// score.Scorer. It is safe for concurrent use.
type Scorer struct {
	component string
	src       string
	prog      *vm.Program
	names     []string // free identifiers the expression reads, sorted
	must      []string // of them, those read unguarded somewhere: on every row
	comps     []string // names it may read as components (Components)
	lookups   []lookup // constant metrics["k"] and components["k"] it reads
	// onlyComps are the names that, bare, read only a component
	// (ComponentNames): never a metric on a row without the component.
	onlyComps map[string]bool
	// hidden are the components the expression may not read (Hide),
	// left out of the components map and the bare names alike.
	hidden map[string]bool
	// scoredKey is the metadata key that marks a row an earlier run
	// scored (ScoredKey), "" when none does.
	scoredKey string
	// watch lists the names the expression reads, bare (in "") or looked
	// up, that seen records the rows' holding of (Unseen).
	watch []lookup
	// onlyTested are the watched names and lookups no ?? or nil test
	// guards: an in test (or a branch it leads to) is all that reaches
	// them, so a row without one never reads it as nil.
	onlyTested map[lookup]bool
	// compReads are the bare names every read of which an in test of
	// components leads to: a component wherever read, never mixed.
	compReads map[string]bool
	// metricShown are the bare names some read of which only an in test
	// of metrics guards ("x" in metrics ? x : 0): a name the chain
	// writes (ComponentNames), which the test does not show, is read on
	// every row then.
	metricShown []string
	seen        seen
}

// lookup is one constant key read from the metrics or components map.
type lookup struct{ in, key string }

// rewardName is the bare name of the reward so far.
const rewardName = "reward"

// builtinNames are always present in the environment.
var builtinNames = map[string]bool{"metrics": true, "components": true, "metadata": true, groupMetricsName: true, groupMetadataName: true}

// groupMetricsName is the map of the group's own metrics (the file's
// group_metrics): named as the file names it, since a bare name is the
// row's and the group's may repeat one of the row's names.
const groupMetricsName = "group_metrics"

// groupMetadataName is the map of the group's own metadata (the file's
// group_metadata), read as metadata is: a string key a group may or may
// not carry, nil where missing.
const groupMetadataName = "group_metadata"

// New compiles src. component is the name the result is written under.
func New(component, src string) (*Scorer, error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("formula %q does not parse: %v", src, err)
	}
	if lineComment(src) {
		return nil, fmt.Errorf("formula %q holds //, which starts a comment in expr: the rest of its line is ignored (a // 2 is a); to divide and round down, write floor(a / b); for a comment, /* ... */", src)
	}
	if err := callsKnown(tree.Node); err != nil {
		return nil, fmt.Errorf("formula %q %w", src, err)
	}
	v := &identVisitor{free: map[string]bool{}, bound: map[string]bool{}, guarded: map[file.Location]bool{}, keys: map[lookup]bool{}, tested: map[lookup]bool{},
		inTests: map[lookup]bool{}, nilGuarded: map[lookup]bool{}, guardedIdent: map[*ast.IdentifierNode]bool{}, nilReadIdent: map[string]bool{},
		compShown: map[*ast.IdentifierNode]bool{}, plainGuarded: map[*ast.IdentifierNode]bool{}}
	ast.Walk(&tree.Node, v)
	var names, must []string
	for n := range v.free {
		if !v.bound[n] && !builtinNames[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, id := range v.idents {
		if !v.guardedIdent[id] && slices.Contains(names, id.Value) && !slices.Contains(must, id.Value) {
			must = append(must, id.Value)
		}
	}
	var metricShown []string
	for _, id := range v.idents {
		if v.guardedIdent[id] && !v.plainGuarded[id] && slices.Contains(names, id.Value) && !slices.Contains(must, id.Value) && !slices.Contains(metricShown, id.Value) {
			metricShown = append(metricShown, id.Value)
		}
	}
	sort.Strings(metricShown)
	comps := append([]string(nil), names...)
	for l := range v.keys {
		if l.in == "components" && !v.bound[l.in] && !slices.Contains(comps, l.key) {
			comps = append(comps, l.key)
		}
	}
	sort.Strings(comps)
	var lookups []lookup
	for l := range v.keys {
		if !v.bound[l.in] {
			lookups = append(lookups, l)
		}
	}
	slices.SortFunc(lookups, func(a, b lookup) int { return strings.Compare(a.in+"\x00"+a.key, b.in+"\x00"+b.key) })
	// A key tested for against the map ("judeg" in metrics ? 1 : 0) and
	// never read is watched as a read one is: misspelt, the test is false
	// on every row.
	// "judeg" in components ? judeg : 0 (or in metrics) tests for the
	// bare name the formula reads: it is watched as that name, not twice.
	var testedOnly []lookup
	for l := range v.inTests {
		bareWatched := (l.in == "components" || l.in == "metrics" && slices.Contains(metricShown, l.key)) && slices.Contains(names, l.key) && !slices.Contains(must, l.key)
		if !v.bound[l.in] && !v.keys[l] && !bareWatched {
			testedOnly = append(testedOnly, l)
		}
	}
	slices.SortFunc(testedOnly, func(a, b lookup) int { return strings.Compare(a.in+"\x00"+a.key, b.in+"\x00"+b.key) })
	// A metric or component may bear the name of one of expr's built-in
	// functions (count, duration, sum, ...): read as a value, the name is
	// the trajectory's, so the builtin is switched off for it.
	// metrics["name"] and components["name"] the expression does not
	// guard must be on the row when read: each becomes a call that says
	// so. Checked as the expression runs, not before, since a branch not
	// taken or the right of a ?? whose left is there reads nothing.
	opts := []expr.Option{
		expr.Function(needFunc, need),
		expr.Patch(&needPatcher{unguarded: func(l lookup, at file.Location) bool { return !v.guarded[at] && !v.bound[l.in] }}),
	}
	for _, n := range names {
		if _, ok := builtin.Index[n]; ok {
			opts = append(opts, expr.DisableBuiltin(n))
		}
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("formula %q does not compile: %v", src, err)
	}
	s := &Scorer{component: component, src: src, prog: prog, names: names, must: must, comps: comps, lookups: lookups,
		watch: append(watchNames(names, must, lookups, v.tested), testedOnly...), onlyTested: map[lookup]bool{}, metricShown: metricShown}
	for _, l := range s.watch {
		if l.in != "" && !v.nilGuarded[l] || l.in == "" && !v.nilReadIdent[l.key] {
			s.onlyTested[l] = true
		}
	}
	s.compReads = compReads(names, v)
	s.seen.found = make([]bool, len(s.watch))
	s.seen.mix = make([]mix, len(names))
	s.seen.mixLeft.Store(int64(s.mixWatched()))
	s.seen.left.Store(int64(len(s.watch)))
	s.seen.metrics, s.seen.comps, s.seen.group = map[string]bool{}, map[string]bool{}, map[string]bool{}
	return s, nil
}

// lineComment reports whether src holds a // outside its strings and
// /* */ comments: a Python floor division (turns // 2), which expr reads
// as a comment to the end of the line, scoring turns alone. src has
// parsed, so its strings lex.
func lineComment(src string) bool {
	toks, err := lexer.Lex(file.NewSource(src))
	if err != nil {
		return false
	}
	runes := []rune(src)
	inString := make([]bool, len(runes)+1)
	for _, tok := range toks {
		if tok.Kind == lexer.String {
			for i := tok.From; i < tok.To && i < len(runes); i++ {
				inString[i] = true
			}
		}
	}
	for i := 0; i+1 < len(runes); i++ {
		switch {
		case inString[i] || runes[i] != '/':
		case runes[i+1] == '/':
			return true
		case runes[i+1] == '*':
			end := strings.Index(string(runes[i+2:]), "*/")
			if end < 0 {
				return false
			}
			i += 2 + len([]rune(string(runes[i+2:])[:end])) + 1
		}
	}
	return false
}

// callsKnown returns an error naming the first function n calls that
// expr does not have (sqrt, log): the parser reads a call of a builtin
// as one, and any other callee as a name, which the rows were then
// searched for as a metric, each failing with advice to write
// metrics["sqrt"] ?? 0.
func callsKnown(n ast.Node) error {
	var c callFinder
	ast.Walk(&n, &c)
	if c.unknown == "" {
		return nil
	}
	return fmt.Errorf("calls %s, which is no function: expr's are abs, ceil, floor, round, int, float, max, min, sum, mean, median, len and others on lists and text (a power is x ** y, a square root x ** 0.5)", c.unknown)
}

// callFinder is callsKnown's walk: unknown is the first callee that is a
// bare name, which a builtin never is in a parsed tree.
type callFinder struct{ unknown string }

func (c *callFinder) Visit(n *ast.Node) {
	if call, ok := (*n).(*ast.CallNode); ok && c.unknown == "" {
		if id, ok := call.Callee.(*ast.IdentifierNode); ok {
			c.unknown = id.Value
		}
	}
}

// compReads returns the names of names every read of which an in test
// of components leads to (v.compShown).
func compReads(names []string, v *identVisitor) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	for _, id := range v.idents {
		if !v.compShown[id] {
			delete(out, id.Value)
		}
	}
	return out
}

// identVisitor collects identifiers, the names bound by let, and the
// reads of constant keys of metrics and components that are guarded. A
// read is guarded when the expression says there what to do without
// the key (metrics.x ?? 0, metrics?.x, metrics.x == nil): a missing one
// is then nil, as expr gives it, and not an error. Each read on its own,
// by where it stands in the source (the compiled tree is parsed anew):
// (metrics.x ?? 0) + metrics.x reads x unguarded on the right.
type identVisitor struct {
	free, bound map[string]bool
	guarded     map[file.Location]bool
	// tested are the keys some read guards or a test (in, == nil) asks
	// for: the expression means to go on without them.
	tested map[lookup]bool
	keys   map[lookup]bool // every constant key read, guarded or not
	// inTests are the keys an in test asks the metrics or components map
	// itself for ("x" in metrics, "x" in keys(components)); nilGuarded
	// those a ?? or nil test guards, read as nil where missing.
	inTests, nilGuarded map[lookup]bool
	// Each identifier read, and those a ?? or nil test guards (reward ??
	// 0): a bare name read only so may be missing, and is nil then.
	idents       []*ast.IdentifierNode
	guardedIdent map[*ast.IdentifierNode]bool
	// nilReadIdent are the bare names some ?? or nil test reads (reward
	// ?? 0, env == nil): nil there where missing. A name only an in
	// test of components leads to is never read on a row without it.
	nilReadIdent map[string]bool
	// compShown are the reads of a bare name that an in test of
	// components leads to ("x" in components ? x : 0): the component,
	// never a metric of the name.
	compShown map[*ast.IdentifierNode]bool
	// plainGuarded are the reads guardedIdent holds but for those only
	// an in test of metrics guards (metricShown).
	plainGuarded map[*ast.IdentifierNode]bool
}

func (v *identVisitor) Visit(n *ast.Node) {
	switch n := (*n).(type) {
	case *ast.IdentifierNode:
		v.free[n.Value] = true
		v.idents = append(v.idents, n)
	case *ast.VariableDeclaratorNode:
		v.bound[n.Name] = true
	case *ast.MemberNode:
		if l, _, ok := mapKey(n); ok {
			v.keys[l] = true
			if n.Optional {
				v.guarded[n.Location()] = true
				v.tested[l] = true
			}
		}
	case *ast.BinaryNode:
		v.guard(n)
		v.guardAfterTest(n)
	case *ast.ConditionalNode:
		// reward == nil ? 5 : reward reads reward in the branch its
		// test takes only where reward is there.
		v.markShown(n.Exp1, n.Cond, true)
		v.markShown(n.Exp2, n.Cond, false)
	}
}

// markShown marks the reads within n of the bare names that cond,
// evaluating to outcome, shows are there.
func (v *identVisitor) markShown(n, cond ast.Node, outcome bool) {
	v.markIdents(n, nonNilIf(cond, outcome, false, true), v.guardedIdent)
	v.markIdents(n, nonNilIf(cond, outcome, false, false), v.plainGuarded)
	v.markIdents(n, nonNilIf(cond, outcome, true, false), v.compShown)
}

// guardAfterTest marks the bare names that the right of && or || reads
// only once its left has shown them there: reward != nil && reward > 0,
// reward == nil || reward > 0 (expr evaluates the right only then).
func (v *identVisitor) guardAfterTest(n *ast.BinaryNode) {
	switch n.Operator {
	case "&&", "and":
		v.markShown(n.Right, n.Left, true)
	case "||", "or":
		v.markShown(n.Right, n.Left, false)
	}
}

// nonNilIf returns the bare names that cond, evaluating to outcome,
// shows are there: x != nil or "x" in components (or in
// keys(components)) when true, x == nil or "x" not in components when
// false, and so through &&, || and not.
// comps: only the names an in test of components shows there; metrics:
// an in test of metrics too ("x" in metrics: the bare x, a component or
// else that metric, is there, but for a name the chain writes, which
// eval checks, and reward, the reward so far).
func nonNilIf(cond ast.Node, outcome, comps, metrics bool) []string {
	switch c := cond.(type) {
	case *ast.UnaryNode:
		if c.Operator == "!" || c.Operator == "not" {
			return nonNilIf(c.Node, !outcome, comps, metrics)
		}
	case *ast.BinaryNode:
		switch c.Operator {
		case "==", "!=":
			id, ok := c.Left.(*ast.IdentifierNode)
			_, nilRight := c.Right.(*ast.NilNode)
			if !ok || !nilRight {
				id, ok = c.Right.(*ast.IdentifierNode)
				_, nilLeft := c.Left.(*ast.NilNode)
				ok = ok && nilLeft
			}
			if ok && !comps && (c.Operator == "!=") == outcome {
				return []string{id.Value}
			}
		case "in", "not in":
			// "x" in components: the bare x, which a component of that
			// name is, is there (not so reward, the reward so far).
			// keys(components) holds the same names: the same test.
			key, isKey := c.Left.(*ast.StringNode)
			m := testedMap(c.Right)
			shows := m == "components" || m == "metrics" && metrics && !comps
			if isKey && shows && key.Value != rewardName && (c.Operator == "in") == outcome {
				return []string{key.Value}
			}
		case "&&", "and":
			if outcome {
				return append(nonNilIf(c.Left, true, comps, metrics), nonNilIf(c.Right, true, comps, metrics)...)
			}
		case "||", "or":
			if !outcome {
				return append(nonNilIf(c.Left, false, comps, metrics), nonNilIf(c.Right, false, comps, metrics)...)
			}
		}
	}
	return nil
}

// markIdents marks in into each read of one of names within n.
func (v *identVisitor) markIdents(n ast.Node, names []string, into map[*ast.IdentifierNode]bool) {
	if len(names) > 0 {
		ast.Walk(&n, identMarker{names, into})
	}
}

// identMarker is markIdents' walk.
type identMarker struct {
	names []string
	into  map[*ast.IdentifierNode]bool
}

func (m identMarker) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok && slices.Contains(m.names, id.Value) {
		m.into[id] = true
	}
}

// needFunc is the name of need in a compiled expression: not an
// identifier a formula can write, so never a metric's name.
const needFunc = "$need"

// need(in, m, key) is m[key], or a missingKey error when m, the metrics
// or components map named in, lacks key.
func need(params ...any) (any, error) {
	in, _ := params[0].(string)
	m, _ := params[1].(map[string]any)
	key, _ := params[2].(string)
	v, ok := m[key]
	if !ok {
		return nil, missingKey{in, key}
	}
	return v, nil
}

// missingKey is need's error: an unguarded lookup of a key the row lacks.
type missingKey lookup

func (m missingKey) Error() string { return fmt.Sprintf("no %s %q", m.in, m.key) }

// needPatcher replaces each unguarded metrics["name"] or
// components["name"] with need("metrics", metrics, "name").
type needPatcher struct {
	unguarded func(l lookup, at file.Location) bool
}

func (p *needPatcher) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok || m.Optional {
		return
	}
	l, at, ok := mapKey(m)
	if !ok || !p.unguarded(l, at) {
		return
	}
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: needFunc},
		Arguments: []ast.Node{&ast.StringNode{Value: l.in}, m.Node, &ast.StringNode{Value: l.key}},
	}
	ast.Patch(node, call)
}

// guard marks the reads a binary operation tests for presence. "x" in
// metrics guards none: a read it leads to ("x" in metrics ? metrics.x :
// 0) runs only where x is there, and need, which each unguarded read
// becomes, fails only where it is not.
func (v *identVisitor) guard(n *ast.BinaryNode) {
	var mark func(m ast.Node)
	mark = func(m ast.Node) {
		if l, at, ok := mapKey(m); ok {
			v.guarded[at] = true
			v.tested[l] = true
			v.nilGuarded[l] = true
		}
		if id, ok := m.(*ast.IdentifierNode); ok {
			v.guardedIdent[id] = true
			v.plainGuarded[id] = true
			v.nilReadIdent[id.Value] = true
		}
		// What a ?? falls back on, or a branch, is the value the
		// enclosing ?? or nil test sees: a.x ?? b.y ?? 0 guards b.y.
		switch m := m.(type) {
		case *ast.BinaryNode:
			if m.Operator == "??" {
				mark(m.Right)
			}
		case *ast.ConditionalNode:
			mark(m.Exp1)
			mark(m.Exp2)
		}
	}
	_, leftNil := n.Left.(*ast.NilNode)
	_, rightNil := n.Right.(*ast.NilNode)
	switch {
	case n.Operator == "??":
		mark(n.Left)
	case (n.Operator == "==" || n.Operator == "!=") && rightNil:
		mark(n.Left)
	case (n.Operator == "==" || n.Operator == "!=") && leftNil:
		mark(n.Right)
	case n.Operator == "in" || n.Operator == "not in":
		// "x" in metrics, or in keys(metrics): a test for x in that map
		// only (group_metrics too). Marked in every map, a read of
		// another map's x behind it ("x" in components ?
		// group_metrics.x : 0), or behind a test against a list of
		// names, was warned of as a name the test found on no row,
		// a test the formula never makes.
		if key, ok := n.Left.(*ast.StringNode); ok {
			if m := testedMap(n.Right); m != "" {
				v.tested[lookup{m, key.Value}] = true
				v.inTests[lookup{m, key.Value}] = true
			}
		}
	}
}

// testedMap returns the map an in test asks, metrics, components or
// group_metrics, when n is that map or keys of it; "" otherwise (a list
// of names).
func testedMap(n ast.Node) string {
	var arg ast.Node = n
	switch c := n.(type) {
	case *ast.BuiltinNode:
		if c.Name != "keys" || len(c.Arguments) != 1 {
			return ""
		}
		arg = c.Arguments[0]
	case *ast.CallNode:
		callee, ok := c.Callee.(*ast.IdentifierNode)
		if !ok || callee.Value != "keys" || len(c.Arguments) != 1 {
			return ""
		}
		arg = c.Arguments[0]
	}
	if id, ok := arg.(*ast.IdentifierNode); ok && lookupMap(id.Value) {
		return id.Value
	}
	return ""
}

// lookupMap reports whether name is a map whose constant keys must be on
// the row. Metadata is left out: a string key that a row may or may not
// carry, which a formula may compare as it is.
func lookupMap(name string) bool {
	return name == "metrics" || name == "components" || name == groupMetricsName
}

// mapKey returns the map and key that n reads when it is metrics["key"]
// or components.key (inside an optional chain too), and where in the
// source the read stands.
func mapKey(n ast.Node) (lookup, file.Location, bool) {
	if c, ok := n.(*ast.ChainNode); ok {
		n = c.Node
	}
	m, ok := n.(*ast.MemberNode)
	if !ok {
		return lookup{}, file.Location{}, false
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	key, isKey := m.Property.(*ast.StringNode)
	if !ok || !isKey || !lookupMap(id.Value) {
		return lookup{}, file.Location{}, false
	}
	return lookup{id.Value, key.Value}, m.Location(), true
}

// ComponentNames makes each of names, read bare, the component of that
// name only: on a row without it the name is missing (an error, or nil
// under ??), never a metric of the same name, which is then
// metrics["name"]. hone-score passes the names its chain writes (env and
// each scorer's), which a row may lack (env where the reward was null):
// otherwise the same bare name would be a component on some rows of a
// file and a metric on others. Call it before the first Eval.
func (s *Scorer) ComponentNames(names ...string) {
	s.onlyComps = make(map[string]bool, len(names))
	for _, n := range names {
		s.onlyComps[n] = true
	}
	// A metrics test shows the metric, never the chain's component of
	// its name: "env" in metrics ? env : 0, most likely meant of
	// components, reads env on every row, as if untested, and the test
	// is watched in the bare name's place.
	for _, n := range s.metricShown {
		i := slices.Index(s.watch, lookup{"", n})
		if !s.onlyComps[n] || slices.Contains(s.must, n) || i < 0 {
			continue
		}
		s.must = append(s.must, n)
		if tested := (lookup{"metrics", n}); slices.Contains(s.lookups, tested) {
			s.watch = slices.Delete(s.watch, i, i+1) // read too: watched as a read, or unguarded
		} else {
			s.watch[i] = tested
			s.onlyTested[tested] = true
		}
	}
	s.seen.found = make([]bool, len(s.watch))
	s.seen.left.Store(int64(len(s.watch)))
	s.seen.mixLeft.Store(int64(s.mixWatched()))
}

// Hide leaves names out of what the expression reads: the components
// map (components["k"], values(components), len(components)) and bare
// names alike, as if the rows lacked them. hone-score hides the
// components its chain writes at or after this scorer, and previous: a
// constant read of one is refused (Components), but a read of the whole
// map took them in, on a row scored before the earlier run's values,
// the formula's own among them (sum(values(components)) grew on each
// re-scoring). Call it before the first Eval.
func (s *Scorer) Hide(names ...string) {
	s.hidden = make(map[string]bool, len(names))
	for _, n := range names {
		s.hidden[n] = true
	}
}

// ScoredKey names the metadata key whose value names the chain that
// scored a row before (in hone-score, its chain spec). hone-score gives a
// first formula on such a row the environment's reward, not that run's:
// where the row has none, its reward is null here though the file holds
// one, and the error says so rather than that the row's reward is null.
// Call it before the first Eval.
func (s *Scorer) ScoredKey(key string) { s.scoredKey = key }

// Name returns the component name.
func (s *Scorer) Name() string { return s.component }

// Components returns the names the expression may read as reward
// components, sorted: its bare names (a component shadows a metric of
// the same name) and the constant keys of components["name"]. A chain
// must have written each before the formula runs: on a row scored before,
// a component written later would be the earlier run's value.
func (s *Scorer) Components() []string { return s.comps }

// Expr returns the expression text.
func (s *Scorer) Expr() string { return s.src }

// ScoreGroup evaluates the expression for each trajectory of g.
func (s *Scorer) ScoreGroup(ctx context.Context, g *trajectory.Group) ([]trajectory.RewardComponent, error) {
	out := make([]trajectory.RewardComponent, len(g.Trajectories))
	for i := range g.Trajectories {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := &g.Trajectories[i]
		v, err := s.eval(t, g.Metrics, g.Metadata)
		if err != nil {
			return nil, fmt.Errorf("group %q, trajectory %q: %w", g.ID, t.ID, err)
		}
		out[i] = trajectory.RewardComponent{Name: s.component, Value: v, Explanation: s.src}
	}
	return out, nil
}

// Eval evaluates the expression for one trajectory of a group without
// metrics or metadata of its own (ScoreGroup passes the group's).
func (s *Scorer) Eval(t *trajectory.Trajectory) (float64, error) { return s.eval(t, nil, nil) }

// eval evaluates the expression for t, of a group whose own metrics are
// group and whose own metadata is groupMeta.
func (s *Scorer) eval(t *trajectory.Trajectory, group map[string]float64, groupMeta map[string]string) (float64, error) {
	env := make(map[string]any, len(t.Metrics)+len(t.RewardComponents)+5)
	metrics := make(map[string]any, len(t.Metrics))
	for k, v := range t.Metrics {
		metrics[k] = v
		env[k] = v
	}
	comps := make(map[string]any, len(t.RewardComponents))
	for _, c := range t.RewardComponents {
		if s.hidden[c.Name] {
			continue
		}
		comps[c.Name] = c.Value
		env[c.Name] = c.Value
	}
	meta := make(map[string]any, len(t.Metadata))
	for k, v := range t.Metadata {
		meta[k] = v
	}
	gm := make(map[string]any, len(group))
	for k, v := range group {
		gm[k] = v
	}
	gmeta := make(map[string]any, len(groupMeta))
	for k, v := range groupMeta {
		gmeta[k] = v
	}
	// A bare reward is the reward so far, absent while it is null: a
	// metric of that name is read as metrics["reward"] on every row, not
	// in the reward's place on the rows without one.
	delete(env, rewardName)
	for n := range s.onlyComps {
		if v, ok := comps[n]; ok {
			env[n] = v
		} else {
			delete(env, n)
		}
	}
	if t.Reward != nil {
		env[rewardName] = *t.Reward
	}
	env["metrics"], env["components"], env["metadata"], env[groupMetricsName], env[groupMetadataName] = metrics, comps, meta, gm, gmeta
	for _, n := range s.names {
		if _, ok := env[n]; !ok && !slices.Contains(s.must, n) {
			env[n] = nil // every read guarded: reward ?? 0, or behind a test showing it there
		}
	}
	for _, n := range s.must {
		if _, ok := env[n]; !ok {
			if n == rewardName {
				// Point at what the row holds: components["reward"] reads
				// an imported component of that name, metrics["reward"]
				// nothing on such a row.
				in := "a metric named reward is metrics"
				if _, ok := findComponent(t, rewardName); ok {
					in = "the row's component named reward is components"
				}
				if chain, ok := t.Metadata[s.scoredKey]; ok && s.scoredKey != "" {
					return 0, fmt.Errorf("formula %q: the reward so far is null: the row has no environment reward (it had none when first scored), which a formula before any other scorer reads as reward, not the one %s gave (has %s); %s[%q]", s.src, chain, describe(t, group, groupMeta), in, rewardName)
				}
				return 0, fmt.Errorf("formula %q: the row's reward is null (no environment reward, and no scorer before this one gave one; has %s); %s[%q]", s.src, describe(t, group, groupMeta), in, rewardName)
			}
			if s.onlyComps[n] {
				return 0, fmt.Errorf("formula %q: no component named %q (has %s); the chain writes %q as a component, which a bare name reads on every row: a metric of that name is metrics[%q], a row that may lack the component components[%q] ?? 0", s.src, n, describe(t, group, groupMeta), n, n, n)
			}
			if whole, in, ok := splitName(t, n); ok {
				return 0, fmt.Errorf("formula %q: no metric or component named %q (has %s); the row's %s %q is one name, which a bare name cannot spell (a dot reads a field, a dash or slash is arithmetic): write %s[%q]", s.src, n, describe(t, group, groupMeta), strings.TrimSuffix(in, "s"), whole, in, whole)
			}
			if _, ok := group[n]; ok {
				// The group's metric of that name: metrics[n] ?? 0 would
				// read 0 on every row.
				return 0, fmt.Errorf("formula %q: no metric or component named %q (has %s); a bare name reads the row's, and the group's metric %q is group_metrics[%q]", s.src, n, describe(t, group, groupMeta), n, n)
			}
			// A metadata key: metrics[n] ?? 0 would read 0 on every row.
			if _, ok := t.Metadata[n]; ok {
				return 0, fmt.Errorf("formula %q: no metric or component named %q (has %s); a bare name reads the row's metrics and components, and the row's metadata key %q is metadata[%q]", s.src, n, describe(t, group, groupMeta), n, n)
			}
			if _, ok := groupMeta[n]; ok {
				return 0, fmt.Errorf("formula %q: no metric or component named %q (has %s); a bare name reads the row's metrics and components, and the group's metadata key %q is group_metadata[%q]", s.src, n, describe(t, group, groupMeta), n, n)
			}
			return 0, fmt.Errorf("formula %q: no metric or component named %q (has %s); where a row may lack it, write metrics[%q] ?? 0", s.src, n, describe(t, group, groupMeta), n)
		}
	}
	res, err := expr.Run(s.prog, env)
	if missing := (missingKey{}); errors.As(err, &missing) {
		what := "metric"
		switch missing.in {
		case "components":
			what = "component"
		case groupMetricsName:
			what = "group metric"
		}
		if _, ok := group[missing.key]; ok && missing.in != groupMetricsName {
			return 0, fmt.Errorf("formula %q: no %s named %q (has %s); the group's metric %q is group_metrics[%q]", s.src, what, missing.key, describe(t, group, groupMeta), missing.key, missing.key)
		}
		return 0, fmt.Errorf("formula %q: no %s named %q (has %s); where a row may lack it, write %s[%q] ?? 0", s.src, what, missing.key, describe(t, group, groupMeta), missing.in, missing.key)
	}
	if err != nil {
		return 0, fmt.Errorf("formula %q: %v", s.src, runError(err))
	}
	var f float64
	switch r := res.(type) {
	case float64:
		f = r
	case int:
		f = float64(r)
	case bool:
		if r {
			f = 1
		}
	default:
		return 0, fmt.Errorf("formula %q gave %s, not a number", s.src, valueKind(res))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("formula %q gave %v, not a finite number%s", s.src, f, s.notFinite(t, group))
	}
	s.record(t.ID, metrics, comps, gm)
	return f, nil
}

// runError returns err, but for a value used as a condition (win ? 1 :
// 0, not illegal: metrics are numbers, never true or false; metadata are
// text), which expr reports in Go's words ("interface conversion:
// interface {} is float64, not bool"): that gets a message saying what
// to write, at the same place in the formula. The advice follows the
// value's type: != 0 on a text is true for any text.
func runError(err error) error {
	var fe *file.Error
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Message, "interface conversion:") || !strings.HasSuffix(fe.Message, "not bool") {
		return err
	}
	c := *fe
	switch {
	case strings.Contains(fe.Message, " is string,"):
		c.Message = `text where a condition (true or false) is wanted: metadata are text; compare it, e.g. metadata["k"] == "true"`
	case strings.Contains(fe.Message, " is nil,"):
		c.Message = `nil, a key the row lacks, where a condition (true or false) is wanted: compare it, e.g. metadata["k"] == "true", false where the key is missing`
	default:
		c.Message = "a number where a condition (true or false) is wanted: compare it, e.g. win != 0, or for not illegal, illegal == 0"
	}
	return &c
}

// notFinite names the values the formula reads that the row holds as NaN
// or ±Inf ("; the row's metric "x" is NaN", "; the group's metric "y" is
// NaN"), "" when none: a result that is not finite is then the formula's
// own doing (a division by zero).
func (s *Scorer) notFinite(t *trajectory.Trajectory, group map[string]float64) string {
	var out []string
	// what is whose value it is: "row's metric", "group's metric" (the
	// group's own, which its rows repeat, not the row's).
	add := func(what, name string, v float64) {
		if msg := fmt.Sprintf("the %s %q is %v", what, name, v); (math.IsNaN(v) || math.IsInf(v, 0)) && !slices.Contains(out, msg) {
			out = append(out, msg)
		}
	}
	for _, n := range s.names {
		// The reward hides a metric of its name (Eval); a component
		// shadows a metric of the same name.
		if n == rewardName {
			if t.Reward != nil && (math.IsNaN(*t.Reward) || math.IsInf(*t.Reward, 0)) {
				out = append(out, fmt.Sprintf("the row's reward is %v", *t.Reward))
			}
		} else if c, ok := findComponent(t, n); ok {
			add("row's component", n, c)
		} else if m, ok := t.Metrics[n]; ok && !s.onlyComps[n] {
			add("row's metric", n, m)
		}
	}
	for _, l := range s.lookups {
		switch l.in {
		case "components":
			if c, ok := findComponent(t, l.key); ok && !slices.Contains(s.names, l.key) {
				add("row's component", l.key, c)
			}
		case groupMetricsName:
			if m, ok := group[l.key]; ok {
				add("group's metric", l.key, m)
			}
		default:
			if m, ok := t.Metrics[l.key]; ok {
				add("row's metric", l.key, m)
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

// splitName finds the row's component or metric (in that order, as a bare
// name reads them) whose name is n followed by a character no bare name
// holds ("tool.calls", "num-turns", "judge/score" for n "tool", "num",
// "judge"): the expression split it. in is "components" or "metrics".
func splitName(t *trajectory.Trajectory, n string) (whole, in string, ok bool) {
	splits := func(name string) bool {
		if len(name) <= len(n) || !strings.HasPrefix(name, n) {
			return false
		}
		c := name[len(n)]
		return !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80)
	}
	for _, c := range t.RewardComponents {
		if splits(c.Name) {
			return c.Name, "components", true
		}
	}
	var metrics []string
	for k := range t.Metrics {
		if splits(k) {
			metrics = append(metrics, k)
		}
	}
	if len(metrics) == 0 {
		return "", "", false
	}
	slices.Sort(metrics) // the same one named on every run
	return metrics[0], "metrics", true
}

// findComponent returns the value of t's component name.
func findComponent(t *trajectory.Trajectory, name string) (float64, bool) {
	for _, c := range t.RewardComponents {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}

// valueKind names what a formula gave in words a user knows, never a Go
// type name.
func valueKind(v any) string {
	switch r := v.(type) {
	case nil:
		return "nothing (nil)"
	case string:
		return fmt.Sprintf("the text %q", r)
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return fmt.Sprintf("a list %v", v)
	case reflect.Map:
		return "a map"
	case reflect.Func:
		return "a function"
	}
	return fmt.Sprintf("%v", v)
}

// describe lists what a trajectory, of a group whose own metrics are
// group and whose own metadata is groupMeta, offers a formula, for an
// error about a name it lacks. The metadata keys are listed too: a
// misspelt one (spt == "hard") is otherwise told of no such key.
func describe(t *trajectory.Trajectory, group map[string]float64, groupMeta map[string]string) string {
	comps := make([]string, 0, len(t.RewardComponents))
	for _, c := range t.RewardComponents {
		comps = append(comps, c.Name)
	}
	sort.Strings(comps)
	var parts []string
	add := func(what string, names []string) {
		if len(names) > 0 {
			parts = append(parts, what+" "+strings.Join(names, ", "))
		}
	}
	add("group metrics", slices.Sorted(maps.Keys(group)))
	add("metrics", slices.Sorted(maps.Keys(t.Metrics)))
	add("components", comps)
	if t.Reward != nil {
		parts = append(parts, "reward")
	}
	add("metadata", slices.Sorted(maps.Keys(t.Metadata)))
	add("group metadata", slices.Sorted(maps.Keys(groupMeta)))
	if len(parts) == 0 {
		return "no metrics or components"
	}
	return strings.Join(parts, "; ")
}
