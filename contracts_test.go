package hone

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The agreements between stages (input sets, the adapter run folder, the
// model folder, the OpenAI message shape, process conventions) each have one
// implementation, in format (and cmd/internal/cli for process concerns).
// The contracts_*_test.go files pin that: each names what only its home may
// spell out, and where that home is.

// sourceFile is one non-test Go file of the module, parsed.
type sourceFile struct {
	rel  string // slash-separated path relative to the module root
	file *ast.File
	fset *token.FileSet
}

// moduleSources parses every non-test Go file of the module, skipping the
// folders the import policy skips.
func moduleSources(t *testing.T) []sourceFile {
	t.Helper()
	return goSources(t, false)
}

// testSources parses every _test.go file of the module, as moduleSources.
func testSources(t *testing.T) []sourceFile {
	t.Helper()
	return goSources(t, true)
}

// goSources parses the module's test files (tests) or its other Go files.
func goSources(t *testing.T, tests bool) []sourceFile {
	t.Helper()
	var out []sourceFile
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if notCode(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") != tests {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, sourceFile{rel: filepath.ToSlash(path), file: f, fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no Go sources found")
	}
	return out
}

// inAny reports whether rel lies under one of the slash-separated prefixes
// (a folder, or a single file).
func inAny(rel string, prefixes []string) bool {
	for _, p := range prefixes {
		if rel == p || strings.HasPrefix(rel, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// stringsOutside lists, as "file:line: text", every string literal outside
// home that matches re: a contract's spelling (a file name, a pattern, a
// variable name) that only its home may write.
func stringsOutside(srcs []sourceFile, re *regexp.Regexp, home []string) []string {
	var out []string
	for _, sf := range srcs {
		if inAny(sf.rel, home) {
			continue
		}
		ast.Inspect(sf.file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && re.MatchString(s) {
				out = append(out, fmt.Sprintf("%s: %q", sf.fset.Position(lit.Pos()), s))
			}
			return true
		})
	}
	return out
}

// callsOutside lists every call of pkgPath's function name (however the
// package is imported) outside home.
func callsOutside(srcs []sourceFile, pkgPath, name string, home []string) []string {
	var out []string
	for _, sf := range srcs {
		if inAny(sf.rel, home) {
			continue
		}
		local := ""
		for _, imp := range sf.file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == pkgPath {
				local = pkgPath[strings.LastIndex(pkgPath, "/")+1:]
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		ast.Inspect(sf.file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != name {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
				out = append(out, fmt.Sprintf("%s: %s.%s", sf.fset.Position(sel.Pos()), local, name))
			}
			return true
		})
	}
	return out
}

// packageVar is one package-level variable (other than _) of a source
// file; value is nil for a variable declared without one, or with a
// multi-valued call (var a, b = f()).
type packageVar struct {
	sf    sourceFile
	name  *ast.Ident
	value ast.Expr
}

// packageVarsOf walks the package-level var declarations of srcs: the one
// walker the contracts that look at package variables share.
func packageVarsOf(srcs []sourceFile) []packageVar {
	var out []packageVar
	for _, sf := range srcs {
		for _, d := range sf.file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.Name == "_" {
						continue
					}
					var value ast.Expr
					if len(vs.Values) == len(vs.Names) {
						value = vs.Values[i]
					}
					out = append(out, packageVar{sf: sf, name: name, value: value})
				}
			}
		}
	}
	return out
}

// String is "file:line: var name".
func (v packageVar) String() string {
	return fmt.Sprintf("%s: var %s", v.sf.fset.Position(v.name.Pos()), v.name.Name)
}

// pin fails t once for each place found outside a contract's home.
func pin(t *testing.T, found []string, home []string, why string) {
	t.Helper()
	for _, f := range found {
		t.Errorf("%s: %s (its one home: %s)", f, why, strings.Join(home, ", "))
	}
}

// TestContractScanners checks the scanners find what exists, so that a pin
// that passes is not a pin that cannot fail.
func TestContractScanners(t *testing.T) {
	srcs := moduleSources(t)
	if got := stringsOutside(srcs, regexp.MustCompile(`^github\.com/hone-rl/hone/format/`), nil); len(got) == 0 {
		t.Error("stringsOutside finds no import of format/")
	}
	if got := stringsOutside(srcs, regexp.MustCompile(`^github\.com/hone-rl/hone/format/`), []string{"cmd", "collect", "format", "internal", "kernels", "pipelines", "score", "serve", "train"}); len(got) != 0 {
		t.Errorf("stringsOutside reports inside its home: %v", got)
	}
	if got := callsOutside(srcs, "fmt", "Errorf", nil); len(got) == 0 {
		t.Error("callsOutside finds no fmt.Errorf")
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", "package x\nvar (\n\tA = 1\n\t_ = 2\n\tb, c = f()\n\td int\n)\nconst E = 3\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range packageVarsOf([]sourceFile{{rel: "x.go", file: f, fset: fset}}) {
		got = append(got, fmt.Sprintf("%s=%v", v.name.Name, v.value != nil))
	}
	if strings.Join(got, " ") != "A=true b=false c=false d=false" {
		t.Errorf("packageVarsOf finds %v, want A with its value, then b, c, d without one", got)
	}
	if !inAny("format/trajectory/reader.go", []string{"format/trajectory"}) || inAny("format/trajectoryx/a.go", []string{"format/trajectory"}) {
		t.Error("inAny matches the wrong prefixes")
	}
}
