package chattemplate

import (
	"testing"

	"github.com/ardanlabs/jinja"
)

// TestSelectByTestName: a test named as a string to select, reject,
// selectattr and rejectattr is the test `is` gives, jinja2's: the
// engine's own tests answered them, so 'sequence' left strings and dicts
// out, 'odd' and 'even' were false for every float, 'divisibleby',
// 'escaped', 'filter' and 'test' failed as unknown tests, and a string or
// dict value gave nothing. The wants are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up:
//
//	environment().from_string(src).render()
func TestSelectByTestName(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ ['ab', [1], {'a': 1}, 3, none]|select('sequence')|list }}|{{ [{'a': 'ab'}, {'a': 3}, {'a': [2]}]|selectattr('a', 'sequence')|list|length }}|{{ ['ab', 3]|reject('sequence')|list }}",
			"['ab', [1], {'a': 1}]|2|[3]"},
		{"{{ [1.0, 3, 2, 2.0]|select('odd')|list }}|{{ [1.0, 2, 4.0]|reject('even')|list }}|{{ [{'n': 1.0}, {'n': 2.0}]|selectattr('n', 'even')|list }}|{{ [{'n': 3.0}]|rejectattr('n', 'odd')|list }}",
			"[1.0, 3]|[1.0]|[{'n': 2.0}]|[]"},
		{"{{ [3, 4, 6.0]|select('divisibleby', 3)|list }}|{{ [{'n': 3}, {'n': 4}]|rejectattr('n', 'divisibleby', 2)|map(attribute='n')|list }}|{{ [4, 5]|reject('divisibleby', num=2)|list }}",
			"[3, 6.0]|[3]|[5]"},
		{"{{ ['a', none, 1]|select('iterable')|list }}|{{ ['x']|select('escaped')|list }}|{{ ['upper', 'nope']|select('test')|list }}|{{ ['lower', 'x']|reject('filter')|list }}",
			"['a']|[]|['upper']|['x']"},
		{"{{ 'a1'|select('string')|list }}|{{ {'k': 1, 'j': 2}|reject('equalto', 'k')|list }}|{{ [1, 0, 2]|select('gt', 0)|list }}|{{ [1, 0]|select|list }}|{{ [1, 0]|reject()|list }}|{{ nothing|select('odd')|list }}",
			"['a', '1']|['j']|[1, 2]|[1]|[0]|[]"},
		{"{{ 4 is divisibleby(num=2) }}|{{ 5 is not divisibleby 2 }}", "True|True"},
		{"{{ ['a']|select('odd')|list }}", "error:not all arguments converted"},
		{"{{ [1]|select('nosuch')|list }}", "error:nosuch"},
		{"{{ [1]|select('truthy')|list }}", "error:No test named 'truthy'"},
	})
}

// A select given one of our tests by name takes that test alone: it built
// every callable of pyCallables for each call, twice the allocations of a
// select the engine's tests answer, in every turn of a template's loop.
// A call costs fewer allocations than pyCallables has callables, which
// building the table cannot.
func TestSelectByOwnTestBuildsItAlone(t *testing.T) {
	calls := pyCallables()
	sel := calls[selectName].AsCallable().Fn
	args := []jinja.Value{jinja.NewList([]jinja.Value{jinja.NewInt(1), jinja.NewInt(2)}), calls[listName], jinja.NewString("odd")}
	allocs := testing.AllocsPerRun(20, func() {
		got, err := sel(args, nil)
		if err != nil || got.AsList().Len() != 1 {
			t.Fatalf("got %v %v, want [1]", got, err)
		}
	})
	if allocs >= float64(len(calls)) {
		t.Errorf("select('odd'): %.0f allocations a call, want fewer than pyCallables' %d", allocs, len(calls))
	}
}
