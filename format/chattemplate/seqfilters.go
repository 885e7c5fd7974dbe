package chattemplate

import (
	"fmt"

	"github.com/ardanlabs/jinja"
)

// firstName and lastName are the variables our first and last filters
// are passed as: the engine's give Undefined for anything but a list.
const (
	firstName = "__hone_first"
	lastName  = "__hone_last"
)

// edgeFilter is jinja2's first (last where last): the value's first (or
// last) item, what list gives of it (a string's character, a dict's key),
// and Undefined where there is none; a value Python cannot iterate fails.
func edgeFilter(last bool) func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	name := "first"
	if last {
		name = "last"
	}
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s: takes 1 positional argument but %d were given", name, len(args))
		}
		items, err := listFilter(args, nil)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s: %w", name, err)
		}
		list := items.AsList().Items
		switch {
		case len(list) == 0:
			return jinja.Undefined(), nil
		case last:
			return list[len(list)-1], nil
		}
		return list[0], nil
	}
}
