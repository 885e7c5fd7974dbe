package chattemplate

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ardanlabs/jinja"
)

// boundNames are the names Render binds into a rendering's variables
// besides the kwargs and special tokens: those of variables() and every
// callable a compiled template may be given.
func boundNames(t *testing.T) []string {
	t.Helper()
	tmpl, err := New("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := tmpl.variables(Input{}, false, argsDict)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]jinja.Value{dictsortName: jinja.None()}
	for _, m := range []map[string]jinja.Value{data, (&budget{}).callables(), pyCallables(), strMethodCallables()} {
		maps.Copy(all, m)
	}
	// transformers' globals, which a kwarg shadows
	// (TestKwargShadowsGlobals).
	delete(all, "raise_exception")
	delete(all, "strftime_now")
	return slices.Sorted(maps.Keys(all))
}

// raise_exception and strftime_now are globals of transformers' jinja2
// environment, which render()'s keyword arguments shadow: a kwarg named
// so is the template's variable there. Render dropped it without a word
// and kept its own.
func TestKwargShadowsGlobals(t *testing.T) {
	tmpl, err := New(`{{ raise_exception }} {{ strftime_now }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{"raise_exception": "r", "strftime_now": 3}})
	if want := "r 3"; err != nil || got != want {
		t.Errorf("got %q %v, want %q", got, err, want)
	}
}

// A kwarg may not take the name of anything Render binds itself: the
// template's call of one of our callables would reach the kwarg, or the
// kwarg would be dropped without a word.
func TestEveryBoundNameIsReserved(t *testing.T) {
	tmpl, err := New(`{{ messages | length }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range boundNames(t) {
		if _, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{name: "x"}}); err == nil || !strings.Contains(err.Error(), "set by Render itself") {
			t.Errorf("kwarg %q: got %v, want it refused", name, err)
		}
		js, _ := json.Marshal(map[string]string{name: "x"})
		if _, err := KwargsFromJSON(js); err == nil {
			t.Errorf("KwargsFromJSON %s: want it refused", js)
		}
	}
}

// Every __hone_ name the package's rewriters write into a template is
// reserved, the variables they set (unpackedName) as well as the
// callables; probeKey is a dict key and kwargsName a keyword argument's
// name, never a variable.
func TestEveryInternalNameIsReserved(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen, reserved := 0, reservedNames()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !strings.HasPrefix(s, "__hone_") || s == probeKey || s == kwargsName {
				return true
			}
			seen++
			if !isReserved(reserved, s) {
				t.Errorf("%s: %q is not reserved", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
	if seen < 40 {
		t.Fatalf("found %d internal names, want the package's 40 and more", seen)
	}
}
