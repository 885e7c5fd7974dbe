package hone

import (
	"fmt"
	"go/ast"
	"regexp"
	"strconv"
	"testing"
)

// What a value does is decided by whoever builds it: the command builds the
// backend from its flags and passes it down (STYLE.md habit 7), a library
// hands out fresh values instead of exporting mutable ones, and nothing is
// switched at start-up by an init function (DESIGN.md: no global mutable
// state).

// initFuncs lists every func init outside tests.
func initFuncs(srcs []sourceFile) []string {
	var out []string
	for _, sf := range srcs {
		for _, d := range sf.file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				out = append(out, fmt.Sprintf("%s: func init", sf.fset.Position(fd.Pos())))
			}
		}
	}
	return out
}

// packageVars lists the package-level variables (other than _) of the
// files under prefixes (nil: every file) that keep(name, value) accepts;
// value is nil for a variable declared without one.
func packageVars(srcs []sourceFile, prefixes []string, keep func(name *ast.Ident, value ast.Expr) bool) []string {
	var out []string
	for _, v := range packageVarsOf(srcs) {
		if (prefixes == nil || inAny(v.sf.rel, prefixes)) && keep(v.name, v.value) {
			out = append(out, v.String())
		}
	}
	return out
}

// isErrorValue reports whether e is errors.New(…) or fmt.Errorf(…): a
// sentinel error, the one kind of exported variable callers compare with.
func isErrorValue(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && (pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf")
}

// importsOf lists the files importing path whose package keep accepts.
func importsOf(srcs []sourceFile, path string, keep func(sf sourceFile) bool) []string {
	var out []string
	for _, sf := range srcs {
		for _, imp := range sf.file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == path && keep(sf) {
				out = append(out, fmt.Sprintf("%s: imports %s", sf.fset.Position(imp.Pos()), path))
			}
		}
	}
	return out
}

func TestContractNoInitFuncs(t *testing.T) {
	pin(t, initFuncs(moduleSources(t)), []string{"the constructor that needs it (cpu.New detects the CPU)"},
		"no init function: what a value uses is decided when it is built")
}

func TestContractNoExportedMutableVars(t *testing.T) {
	found := packageVars(moduleSources(t), nil, func(name *ast.Ident, value ast.Expr) bool {
		return name.IsExported() && (value == nil || !isErrorValue(value))
	})
	pin(t, found, []string{"a function returning a fresh value, or a constant"},
		"no exported package variable other than a sentinel error: any importer could change it for every other")
}

func TestContractCPUBackendState(t *testing.T) {
	srcs := moduleSources(t)
	found := packageVars(srcs, []string{"kernels/cpu"}, func(*ast.Ident, ast.Expr) bool { return true })
	pin(t, found, []string{"the cpu.Backend value, filled by cpu.New"},
		"no package state in kernels/cpu: which GEMM and which vector kernels run is the backend's, from Options and the CPU")
	// cmd/internal/backend is the commands' one builder of their backend
	// from their flags (hone-train and hone-serve share it).
	found = importsOf(srcs, module+"/kernels/cpu", func(sf sourceFile) bool {
		return sf.file.Name.Name != "main" && !inAny(sf.rel, []string{"kernels", "cmd/internal/backend"})
	})
	pin(t, found, []string{"cmd/internal/backend and the benchmark programs (package main), which build the backend"},
		"libraries take a kernels.Backend; only a main package, or the commands' cmd/internal/backend, builds the CPU one")
}

// TestContractProgressLine: a line redrawn in place on the terminal (a
// carriage return that does not end a line, or an ANSI escape) is
// cli.Progress's to draw, so every stage shows progress the same way.
func TestContractProgressLine(t *testing.T) {
	home := []string{"cmd/internal/cli"}
	found := stringsOutside(moduleSources(t), regexp.MustCompile(`^\r($|[^\n])|\x1b\[`), home)
	pin(t, found, home, "a redrawn progress line is drawn by cli.Progress")
}
