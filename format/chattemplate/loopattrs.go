package chattemplate

import (
	"fmt"
	"slices"

	"github.com/ardanlabs/jinja"
)

// addLoopAttrs gives the engine's loop object d of a for loop's run the
// attributes jinja2's has and the engine's lacks: depth and depth0 (1 and
// 0: the engine runs no recursive loop, so every loop that runs is at the
// top) and changed(*values). The body's hook (hookLoop) calls it with the
// loop at the start of each iteration; the engine makes one loop object
// for a run of the loop and sets only its own keys on it each iteration,
// so what is added the first time stays for the run, and changed's last
// values are the run's own, as jinja2's are.
func addLoopAttrs(d *jinja.Dict) {
	// A dict of the template's own named loop ({% for loop in … %},
	// which jinja2 refuses and the engine lets shadow its loop object)
	// is left as it is: only the engine's object has its keys.
	if d.Has("depth") || !d.Has("index0") || !d.Has("revindex0") || !d.Has("previtem") {
		return
	}
	// Set as the engine sets its per-iteration keys, in Data alone: the
	// loop object prints as it did ({{ loop }}), with length only.
	d.Data["depth"] = jinja.NewInt(1)
	d.Data["depth0"] = jinja.NewInt(0)
	var last []jinja.Value
	called := false
	d.Data["changed"] = jinja.NewCallable("loop.changed", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		for k := range kwargs {
			return jinja.Undefined(), fmt.Errorf("TypeError: loop.changed() got an unexpected keyword argument '%s'", k)
		}
		if called && slices.EqualFunc(last, args, pyEqual) {
			return jinja.NewBool(false), nil
		}
		last, called = slices.Clone(args), true
		return jinja.NewBool(true), nil
	})
}

// pyEqual is Python's == of a and b as far as loop.changed compares them:
// numbers by value across int, float and bool (1 == 1.0 == True), any
// other value by the engine's equality.
func pyEqual(a, b jinja.Value) bool {
	num := func(v jinja.Value) (float64, bool) {
		switch {
		case v.IsBool():
			if v.AsBool() {
				return 1, true
			}
			return 0, true
		case v.IsInt():
			return float64(v.AsInt()), true
		case v.IsFloat():
			return v.AsFloat(), true
		}
		return 0, false
	}
	if x, ok := num(a); ok {
		y, ok := num(b)
		return ok && x == y
	}
	return a.Equals(b)
}

// loopItemName is the variable loopItem is passed as: pyOps rewrites
// loop.previtem or loop.nextitem that another read follows
// (loop.previtem.role, loop.nextitem['x']) to __hone_loop_item(loop.previtem,
// 'previtem').role.
const loopItemName = "__hone_loop_item"

// loopItemNames maps loop's item attributes to the missing item jinja2's
// UndefinedError names.
var loopItemNames = map[string]string{"previtem": "previous", "nextitem": "next"}

// loopItem gives loop.previtem or loop.nextitem (its first argument; its
// second is which) back, or jinja2's UndefinedError "there is no previous
// item" where it is undefined, at the loop's first or last item: jinja2's
// Undefined there prints "" but raises on an attribute or item of it,
// where the engine read "" and a template reading loop.previtem.role
// unguarded rendered.
func loopItem(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 || !args[1].IsString() {
		return jinja.Undefined(), fmt.Errorf("loop item check: takes the item and its attribute's name, got %d arguments", len(args))
	}
	if args[0].IsUndefined() {
		return jinja.Undefined(), fmt.Errorf("UndefinedError: there is no %s item", loopItemNames[args[1].AsString()])
	}
	return args[0], nil
}
