package chattemplate

import (
	"fmt"

	"github.com/ardanlabs/jinja"
)

// The engine's list.append, list.insert and dict.update change a value in
// place, where no hook measures it, and a list or dict made to contain
// itself (l.append(l), or through a namespace that holds it) is then
// walked without end by the engine's own ==, in, join and unique: Go's
// stack overflows and the process dies. The template text is rewritten
// (renameFilters) to call ours instead: `x.append(y)` becomes
// `x|__hone_mut_append(y)`, and `x.append` taken without a call becomes
// `x|__hone_mut_attr_append`, the method bound to x. Ours refuse, with a
// value depth *LimitError, to put a value inside a list or dict it
// contains; otherwise they do what Python's do. jinja2 renders such a
// value (as [[...]]), but a chat template has no use for one.

const (
	mutCallPrefix = "__hone_mut_"
	mutAttrPrefix = "__hone_mut_attr_"
)

// isMutator reports whether name is a method our mutators replace.
func isMutator(name string) bool {
	return name == "append" || name == "insert" || name == "update"
}

// mutatorCallables are the mutators as template variables, bound to b
// for its steps and its limit errors.
func (b *budget) mutatorCallables() map[string]jinja.Value {
	out := map[string]jinja.Value{}
	for _, name := range []string{"append", "insert", "update"} {
		out[mutCallPrefix+name] = jinja.NewCallable(name, func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 {
				return jinja.Undefined(), fmt.Errorf("%s: called on nothing", name)
			}
			m := b.method(args[0], name)
			if !m.IsCallable() {
				return jinja.Undefined(), fmt.Errorf("%s is not callable: %s has no method %s", name, "'"+pyTypeName(args[0])+"' object", name)
			}
			return m.AsCallable().Fn(args[1:], kwargs)
		})
		out[mutAttrPrefix+name] = jinja.NewCallable(name, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 {
				return jinja.Undefined(), nil
			}
			return b.method(args[0], name), nil
		})
	}
	return out
}

// method is what the engine gives for obj.name: a dict's own key first,
// else the method, ours; Undefined for anything else.
func (b *budget) method(obj jinja.Value, name string) jinja.Value {
	switch {
	case obj.IsDict():
		if v, ok := obj.AsDict().Get(name); ok {
			return v
		}
		if name == "update" {
			return jinja.NewCallable("dict.update", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
				return b.update(obj, args, kwargs)
			})
		}
	case obj.IsList() && name == "append":
		return jinja.NewCallable("list.append", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || len(kwargs) != 0 {
				return jinja.Undefined(), fmt.Errorf("TypeError: list.append() takes exactly one argument (%d given)", len(args)+len(kwargs))
			}
			if err := b.refuseCycle(obj, args[0]); err != nil {
				return jinja.Undefined(), err
			}
			obj.AsList().Append(args[0])
			return jinja.None(), nil
		})
	case obj.IsList() && name == "insert":
		return jinja.NewCallable("list.insert", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 2 || len(kwargs) != 0 || !args[0].IsInt() {
				return jinja.Undefined(), fmt.Errorf("TypeError: list.insert() takes an integer index and a value")
			}
			if err := b.refuseCycle(obj, args[1]); err != nil {
				return jinja.Undefined(), err
			}
			l := obj.AsList()
			// Python's: a negative index counts from the end.
			idx := args[0].AsInt()
			if idx < 0 {
				idx = max(idx+int64(len(l.Items)), 0)
			}
			idx = min(idx, int64(len(l.Items)))
			l.Items = append(l.Items, jinja.Undefined())
			copy(l.Items[idx+1:], l.Items[idx:])
			l.Items[idx] = args[1]
			return jinja.None(), nil
		})
	}
	return jinja.Undefined()
}

// update is Python's dict.update with a dict or a list of pairs.
// Keyword arguments are refused: the engine passes them as a Go map,
// which has lost the order Python would insert them in.
func (b *budget) update(obj jinja.Value, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) > 1 || len(kwargs) != 0 {
		return jinja.Undefined(), fmt.Errorf("dict.update takes one dict or list of pairs here (no keyword arguments)")
	}
	if len(args) == 0 {
		return jinja.None(), nil
	}
	if err := b.refuseCycle(obj, args[0]); err != nil {
		return jinja.Undefined(), err
	}
	d := obj.AsDict()
	switch src := args[0]; {
	case src.IsDict():
		s := src.AsDict()
		for _, k := range s.Keys {
			d.Set(k, s.Data[k])
		}
	case src.IsList():
		for i, p := range src.AsList().Items {
			if !p.IsList() || p.AsList().Len() != 2 || !p.AsList().Get(0).IsString() {
				return jinja.Undefined(), fmt.Errorf("dict.update: item %d of the list is no pair of a string key and a value", i)
			}
			d.Set(p.AsList().Get(0).AsString(), p.AsList().Get(1))
		}
	default:
		return jinja.Undefined(), fmt.Errorf("dict.update: %s is no dict", pyTypeName(src))
	}
	return jinja.None(), nil
}

// refuseCycle fails when v is, or contains, the list or dict into, whose
// contents would then contain themselves. Each list or dict walked costs a
// step, so appending a large value again and again stays bounded.
func (b *budget) refuseCycle(into, v jinja.Value) error {
	target := container(into)
	seen := map[any]bool{}
	stack := []jinja.Value{v}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p := container(x)
		if p == nil || seen[p] {
			continue
		}
		if p == target {
			return b.fail("value depth", maxValueDepth, "it puts a list or dict inside itself (append, insert or update), which the engine cannot compare or print")
		}
		seen[p] = true
		b.steps++
		if x.IsList() {
			stack = append(stack, x.AsList().Items...)
		} else {
			for _, k := range x.AsDict().Keys {
				stack = append(stack, x.AsDict().Data[k])
			}
		}
	}
	return b.check()
}

// container is the pointer that identifies a list or dict, nil for
// anything else.
func container(v jinja.Value) any {
	switch {
	case v.IsList():
		return v.AsList()
	case v.IsDict():
		return v.AsDict()
	}
	return nil
}
