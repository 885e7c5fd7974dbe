package hone

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function body may run, braces included,
// outside tests and benchmarks (STYLE.md: small functions; issue #22).
const maxFuncLines = 120

// longFuncs lists, as "file:line: name is N lines", every function of the
// module's non-test sources whose body runs over maxFuncLines lines and
// that does not say why with a comment line starting "// long:" (in its
// doc comment or its body).
func longFuncs(srcs []sourceFile) []string {
	var out []string
	for _, sf := range srcs {
		for _, d := range sf.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			lines := sf.fset.Position(fd.Body.Rbrace).Line - sf.fset.Position(fd.Body.Lbrace).Line + 1
			if lines <= maxFuncLines || saysWhyLong(sf.file, fd) {
				continue
			}
			out = append(out, fmt.Sprintf("%s: %s is %d lines", sf.fset.Position(fd.Pos()), funcName(fd), lines))
		}
	}
	return out
}

// saysWhyLong reports whether fd carries a "// long:" comment line, in its
// doc comment or anywhere in its body.
func saysWhyLong(f *ast.File, fd *ast.FuncDecl) bool {
	for _, cg := range f.Comments {
		if cg != fd.Doc && (cg.Pos() < fd.Body.Lbrace || cg.End() > fd.Body.Rbrace) {
			continue
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "// long:") {
				return true
			}
		}
	}
	return false
}

// funcName is "Name" or "(Recv).Name".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if ix, ok := t.(*ast.IndexListExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + id.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestContractFuncLength: no function outside tests and benchmarks runs
// over maxFuncLines lines unless a "// long:" comment says why.
func TestContractFuncLength(t *testing.T) {
	for _, f := range longFuncs(moduleSources(t)) {
		t.Errorf("%s (limit %d): split it, or say why it must stay whole in a comment line starting \"// long:\"", f, maxFuncLines)
	}
}

// TestContractFuncLengthScanner: longFuncs reports a long function and
// lets one that says why pass, on sources parsed as moduleSources parses
// them (comments kept: without them no "// long:" would be seen).
func TestContractFuncLengthScanner(t *testing.T) {
	body := strings.Repeat("\t_ = 0\n", maxFuncLines)
	src := "package x\n\nfunc a() {\n" + body + "}\n\n// b is long.\n//\n// long: one table, read top to bottom.\nfunc b() {\n" + body + "}\n\nfunc c() {\n\t// long: a switch over every opcode.\n" + body + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := longFuncs([]sourceFile{{rel: "x.go", file: f, fset: fset}})
	if len(got) != 1 || !strings.Contains(got[0], ": a is") {
		t.Errorf("longFuncs = %q, want only a", got)
	}
	for _, sf := range moduleSources(t) {
		if len(sf.file.Comments) > 0 {
			return
		}
	}
	t.Error("moduleSources keeps no comments, so no \"// long:\" can be seen")
}
