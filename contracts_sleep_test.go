package hone

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// A test waits for what another goroutine or process does by polling a
// condition (internal/waitfor), not by sleeping a guessed time; a test of
// timing itself runs on testing/synctest's fake clock. A time.Sleep in a
// test is left only inside synctest.Test, or with a comment line starting
// "// sleep:" on it or right above it that says why the pause is the point.

// sleepsWithoutReason lists the time.Sleep calls of test files that are
// neither inside synctest.Test nor under a "// sleep:" comment.
func sleepsWithoutReason(srcs []sourceFile) []string {
	var out []string
	for _, sf := range srcs {
		var bubbles []ast.Node
		ast.Inspect(sf.file, func(n ast.Node) bool {
			if isCall(n, "synctest", "Test") {
				bubbles = append(bubbles, n)
			}
			return true
		})
		ast.Inspect(sf.file, func(n ast.Node) bool {
			if !isCall(n, "time", "Sleep") {
				return true
			}
			for _, b := range bubbles {
				if b.Pos() <= n.Pos() && n.End() <= b.End() {
					return true
				}
			}
			if !saysWhySleep(sf, n) {
				out = append(out, fmt.Sprintf("%s: time.Sleep", sf.fset.Position(n.Pos())))
			}
			return true
		})
	}
	return out
}

// isCall reports whether n is a call of pkg.name.
func isCall(n ast.Node, pkg, name string) bool {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// saysWhySleep reports whether a comment group holding a "// sleep:" line
// sits on the line of n or ends on the line above it.
func saysWhySleep(sf sourceFile, n ast.Node) bool {
	line := sf.fset.Position(n.Pos()).Line
	for _, cg := range sf.file.Comments {
		end := sf.fset.Position(cg.End()).Line
		if end != line && end != line-1 {
			continue
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "// sleep:") {
				return true
			}
		}
	}
	return false
}

func TestContractNoGuessedSleeps(t *testing.T) {
	pin(t, sleepsWithoutReason(testSources(t)), []string{"internal/waitfor (a condition), testing/synctest (a clock), or a \"// sleep:\" reason"},
		"a sleep in a test guesses how long something takes; wait for the condition instead")
}

// TestContractSleepScanner: the scanner reports a bare sleep and lets the
// two kinds of sleep with a reason pass.
func TestContractSleepScanner(t *testing.T) {
	src := `package x
func a() { time.Sleep(1) }
func b() { synctest.Test(nil, func(*testing.T) { time.Sleep(1) }) }
func c() {
	// sleep: the pause is what is tested.
	time.Sleep(1)
	time.Sleep(2) // sleep: so is this one.
	// not a reason
	time.Sleep(3)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := sleepsWithoutReason([]sourceFile{{rel: "x_test.go", file: f, fset: fset}})
	want := []string{"x_test.go:2:12: time.Sleep", "x_test.go:9:2: time.Sleep"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("sleepsWithoutReason = %q, want %q", got, want)
	}
	if len(testSources(t)) == 0 {
		t.Error("testSources finds no test file")
	}
}
