package game2048

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestDocCommentsNameTheirDeclaration: MaxTarget was declared between
// New's doc comment and New, so go doc showed New with no comment and
// MaxTarget's as "New returns the environment…".
func TestDocCommentsNameTheirDeclaration(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "game2048.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p, err := doc.NewFromFiles(fset, []*ast.File{f}, "github.com/hone-rl/hone/collect/env/game2048")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, fn := range p.Funcs {
		docs[fn.Name] = fn.Doc
	}
	for _, ty := range p.Types {
		for _, fn := range ty.Funcs {
			docs[fn.Name] = fn.Doc
		}
	}
	for _, v := range p.Consts {
		for _, n := range v.Names {
			if len(v.Names) == 1 {
				docs[n] = v.Doc
			}
		}
	}
	for _, name := range []string{"New", "MaxTarget"} {
		if !strings.HasPrefix(docs[name], name+" ") {
			t.Errorf("game2048.go: %s's doc comment is %q, want one beginning %q", name, docs[name], name+" ")
		}
	}
}
