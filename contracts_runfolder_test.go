package hone

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"testing"
)

// runfolderHome is the one home of the adapter run folder contract: what
// hone-train writes into adapters/<run>/ and what hone-serve, its vLLM
// front, hone-collect and hone-inspect read back (step folder names, the
// latest file, metrics.jsonl, the run-name rule, the served names
// "<run>" and "<run>@<N>").
var runfolderHome = []string{"format/runfolder"}

// TestContractRunFolder: no stage spells the run folder's names itself.
func TestContractRunFolder(t *testing.T) {
	srcs := moduleSources(t)
	for _, c := range []struct {
		re  string
		why string
	}{
		{`^\^?step-`, "a step folder name or pattern (use runfolder.StepName, ParseStepName, Steps)"},
		{`^latest$`, "the latest file (use runfolder.LatestName, ReadPointer, WritePointer, Locate)"},
		{`^metrics\.jsonl$`, "the run's metrics file (use runfolder.MetricsName)"},
		{`\[A-Za-z0-9\]\[A-Za-z0-9\._-\]`, "the run-name rule (use runfolder.ValidRun)"},
	} {
		pin(t, stringsOutside(srcs, regexp.MustCompile(c.re), runfolderHome), runfolderHome, c.why)
	}
	pin(t, atSignsOutside(srcs, runfolderHome), runfolderHome,
		`a served name built or split at "@" (use runfolder.ServedName, ParseServed, ServedStep)`)
}

// atSignsOutside lists every string or rune literal that is exactly "@" or
// '@' outside home: the separator of "<run>@<N>", which only the home joins
// or splits on.
func atSignsOutside(srcs []sourceFile, home []string) []string {
	var out []string
	for _, sf := range srcs {
		if inAny(sf.rel, home) {
			continue
		}
		ast.Inspect(sf.file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || (lit.Kind != token.STRING && lit.Kind != token.CHAR) {
				return true
			}
			if lit.Kind == token.CHAR {
				if r, _, _, err := strconv.UnquoteChar(lit.Value[1:len(lit.Value)-1], '\''); err == nil && r == '@' {
					out = append(out, fmt.Sprintf("%s: %s", sf.fset.Position(lit.Pos()), lit.Value))
				}
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && s == "@" {
				out = append(out, fmt.Sprintf("%s: %q", sf.fset.Position(lit.Pos()), s))
			}
			return true
		})
	}
	return out
}

// TestContractRunFolderScanner: the "@" scanner finds both spellings and
// nothing else, so that the pin above can fail.
func TestContractRunFolderScanner(t *testing.T) {
	const src = `package x
var a = strings.Cut(name, "@")
var b = strings.LastIndexByte(name, '@')
var c = '\x40'
var d = "user@example.com"
var e = 'a'
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x/x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	srcs := []sourceFile{{rel: "x/x.go", file: f, fset: fset}}
	if got := atSignsOutside(srcs, nil); len(got) != 3 {
		t.Errorf("atSignsOutside found %q, want lines 2, 3 and 4", got)
	}
	if got := atSignsOutside(srcs, []string{"x"}); len(got) != 0 {
		t.Errorf("atSignsOutside reports inside its home: %q", got)
	}
}
