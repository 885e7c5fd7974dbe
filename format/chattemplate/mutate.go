package chattemplate

import (
	"fmt"
	"slices"

	"github.com/ardanlabs/jinja"
)

// transformers renders a chat template in jinja2's
// ImmutableSandboxedEnvironment, which refuses list.append, list.insert,
// dict.update and the pop of both with a SecurityError ("access to
// attribute 'append' of 'list' object is unsafe."), so a template that
// calls them fails in transformers and vLLM; here it must fail too, not
// render a prompt the model is never served. The engine's own methods
// change the value in place (the other such methods, extend, clear, sort
// and the rest, it lacks, so calling them fails already), so the template
// text is rewritten (renameFilters) to reach ours instead: `x.append(y)`
// becomes `x|__hone_mut_append(y)`, and `x.append` taken without a call
// `x|__hone_mut_attr_append`, which is undefined, as the sandbox's unsafe
// attribute is (it prints nothing and is not defined). The engine's
// namespace is a dict, so a dict's own key of that name comes first:
// namespace(update=5).update is 5, as in jinja2 (a plain dict with a key
// "update" or "pop" is where jinja2 gives the method instead).

const (
	mutCallPrefix = "__hone_mut_"
	mutAttrPrefix = "__hone_mut_attr_"
)

// isMutator reports whether name is a method our mutators replace.
func isMutator(name string) bool {
	return slices.Contains(mutatorNames(), name)
}

// mutatorNames are the methods our mutators replace.
func mutatorNames() []string {
	return []string{"append", "insert", "update", "pop"}
}

// mutatorCallables are the mutators as template variables.
func mutatorCallables() map[string]jinja.Value {
	out := map[string]jinja.Value{}
	for _, name := range mutatorNames() {
		out[mutCallPrefix+name] = jinja.NewCallable(name, func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 {
				return jinja.Undefined(), fmt.Errorf("%s: called on nothing", name)
			}
			obj := args[0]
			if v, ok := ownKey(obj, name); ok {
				if !v.IsCallable() {
					return jinja.Undefined(), fmt.Errorf("'%s' object is not callable", pyTypeName(v))
				}
				return v.AsCallable().Fn(args[1:], kwargs)
			}
			if unsafeMutator(obj, name) {
				return jinja.Undefined(), fmt.Errorf("SecurityError: access to attribute '%s' of '%s' object is unsafe.", name, pyTypeName(obj))
			}
			return jinja.Undefined(), noAttribute(obj, name)
		})
		out[mutAttrPrefix+name] = jinja.NewCallable(name, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 {
				return jinja.Undefined(), nil
			}
			v, _ := ownKey(args[0], name)
			return v, nil
		})
	}
	return out
}

// ownKey is a dict's (or namespace's) entry name, and whether it has one.
func ownKey(obj jinja.Value, name string) (jinja.Value, bool) {
	if !obj.IsDict() {
		return jinja.Undefined(), false
	}
	return obj.AsDict().Get(name)
}

// unsafeMutator reports whether obj.name is a method the sandbox refuses:
// a list's append, insert or pop, a dict's update or pop.
func unsafeMutator(obj jinja.Value, name string) bool {
	return obj.IsList() && name != "update" || obj.IsDict() && (name == "update" || name == "pop")
}

// noAttribute is jinja2's UndefinedError for calling obj.name that obj
// lacks.
func noAttribute(obj jinja.Value, name string) error {
	switch {
	case obj.IsUndefined():
		return fmt.Errorf("an undefined value has no attribute '%s'", name)
	case obj.IsNone():
		return fmt.Errorf("'None' has no attribute '%s'", name)
	}
	return fmt.Errorf("'%s object' has no attribute '%s'", pyTypeName(obj), name)
}
