package hone

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The stage shells: every stage library has one entry, Run(ctx, opts)
// error; the kinds of error that map to exit codes are defined once, in
// internal/stageerr (cmd/internal/cli maps them); only cmd reads the
// environment; what is worth retrying is decided once, in internal/retry.

// stagePackages are the stage libraries whose Run is the stage's one entry.
var stagePackages = []string{"collect", "collect/proxy", "score", "train/grpojob", "train/sft", "serve"}

// envReaders are the benchmark mains that may read the environment: they
// set OMP_WAIT_POLICY for the PyTorch reference they start, and are no
// stage. Everything else leaves the environment to cmd.
var envReaders = []string{
	"cmd",
	"internal/bench",            // gemmbench passes OMP_WAIT_POLICY to PyTorch
	"train/internal/modelbench", // the same
	"serve/internal/servebench", // the same
	"pipelines/k8s/runlocal",    // a main: hands its PATH and environment to the steps
}

func TestContractEnvironmentOnlyInCmd(t *testing.T) {
	srcs := moduleSources(t)
	var found []string
	for _, fn := range []string{"Getenv", "LookupEnv", "Environ", "ExpandEnv"} {
		found = append(found, callsOutside(srcs, "os", fn, envReaders)...)
	}
	for _, fn := range []string{"Getenv", "Environ"} {
		found = append(found, callsOutside(srcs, "syscall", fn, envReaders)...)
	}
	pin(t, found, envReaders, "environment read outside cmd: take the value in Options and let cmd read the variable")
}

// kindHome is the one definition of the kinds of error.
var kindHome = []string{"internal/stageerr"}

// kindExempt are declarations of a kind's name that are not a second
// definition of the kind, with the reason.
var kindExempt = map[string]string{
	// format imports nothing of ours, so it cannot return stageerr's
	// kinds: trajectory.ErrBadInput says a file broke the trajectory
	// format, and the stages mark what the reader returns with
	// stageerr.Input.
	"format/trajectory.ErrBadInput": "format cannot import internal/stageerr",
	// fileset.ErrBadArgument blames an input or output argument (a
	// missing file, a glob matching nothing); cmd/internal/cli marks it
	// stageerr's usage (ResolveInputs, OpenOutput).
	"format/fileset.ErrBadArgument": "format cannot import internal/stageerr",
}

var (
	kindName = regexp.MustCompile(`^Err(Usage|BadInput|Interrupted)$`)
	kindText = regexp.MustCompile(`^(bad )?(usage|input|interrupted)\b`)
)

// kindDecls lists the package-level variables outside home that define a
// kind of error again: by name (ErrUsage, ErrBadInput, ErrInterrupted) or
// by value (errors.New("usage"), errors.New("interrupted")).
func kindDecls(srcs []sourceFile, home []string) []string {
	var out []string
	for _, v := range packageVarsOf(srcs) {
		if inAny(v.sf.rel, home) {
			continue
		}
		if _, ok := kindExempt[path.Dir(v.sf.rel)+"."+v.name.Name]; ok {
			continue
		}
		text := ""
		if v.value != nil {
			text = errorsNewText(v.value)
		}
		if kindName.MatchString(v.name.Name) || kindText.MatchString(text) {
			decl := v.String()
			if text != "" {
				decl += fmt.Sprintf(" = errors.New(%q)", text)
			}
			out = append(out, decl)
		}
	}
	return out
}

// errorsNewText is the message of errors.New("…"), or "".
func errorsNewText(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "New" {
		return ""
	}
	if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "errors" {
		return ""
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, _ := strconv.Unquote(lit.Value)
	return s
}

func TestContractErrorKindsDefinedOnce(t *testing.T) {
	pin(t, kindDecls(moduleSources(t), kindHome), kindHome,
		"a second definition of a kind of error: return internal/stageerr's (Usage, BadInput, Input, ErrInterrupted), which cmd/internal/cli maps to exit codes")
}

// runShapes lists, in the stage packages, every top-level function that
// is not the one entry: a Run whose signature is not
// func(context.Context, Options) error, and any other exported function
// that takes (context.Context, Options), a second entry beside Run.
func runShapes(srcs []sourceFile) (wrong []string, runs map[string]bool) {
	runs = map[string]bool{}
	for _, sf := range srcs {
		dir := path.Dir(sf.rel)
		if !contains(stagePackages, dir) {
			continue
		}
		for _, d := range sf.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() {
				continue
			}
			at := fmt.Sprintf("%s: %s.%s%s", sf.fset.Position(fd.Pos()), dir, fd.Name.Name, signature(fd.Type))
			switch {
			case fd.Name.Name == "Run" && signature(fd.Type) == "(context.Context, Options) error":
				runs[dir] = true
			case fd.Name.Name == "Run":
				wrong = append(wrong, at)
			case strings.HasPrefix(signature(fd.Type), "(context.Context, Options)"):
				wrong = append(wrong, at)
			}
		}
	}
	return wrong, runs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// signature spells a function type's parameter and result types.
func signature(ft *ast.FuncType) string {
	list := func(fl *ast.FieldList) []string {
		var out []string
		if fl == nil {
			return out
		}
		for _, f := range fl.List {
			n := max(len(f.Names), 1)
			for range n {
				out = append(out, typeString(f.Type))
			}
		}
		return out
	}
	s := "(" + strings.Join(list(ft.Params), ", ") + ")"
	res := list(ft.Results)
	switch len(res) {
	case 0:
	case 1:
		s += " " + res[0]
	default:
		s += " (" + strings.Join(res, ", ") + ")"
	}
	return s
}

func typeString(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return typeString(t.X) + "." + t.Sel.Name
	case *ast.StarExpr:
		return "*" + typeString(t.X)
	case *ast.ArrayType:
		return "[]" + typeString(t.Elt)
	}
	return fmt.Sprintf("%T", e)
}

func TestContractOneRunShape(t *testing.T) {
	wrong, runs := runShapes(moduleSources(t))
	home := []string{"DESIGN.md: Run(ctx, opts) error"}
	pin(t, wrong, home, "a stage's entry is Run(ctx context.Context, opts Options) error: what else it returns goes to a callback in Options (Summary), what it needs (Backend, Log) comes in Options")
	for _, p := range stagePackages {
		if !runs[p] {
			t.Errorf("%s has no func Run(context.Context, Options) error", p)
		}
	}
}

// retryHome decides which failures are worth repeating.
var retryHome = []string{"internal/retry"}

// TestContractOneRetryDecorator: the clients of collect and score decide
// what is worth repeating with retry.Status and repeat through retry.Do;
// 429 or 408 spelled out there is a second retry decision. (collect's
// proxy answers 502 and serve answers 429 to their clients; that is no
// retry, and serve is not scanned.)
func TestContractOneRetryDecorator(t *testing.T) {
	srcs := moduleSources(t)
	var found []string
	for _, name := range []string{"StatusTooManyRequests", "StatusRequestTimeout"} {
		for _, f := range callsOutside(srcs, "net/http", name, retryHome) {
			if strings.HasPrefix(f, "collect/") || strings.HasPrefix(f, "score/") {
				found = append(found, f)
			}
		}
	}
	pin(t, found, retryHome, "a retry decision outside internal/retry: classify with retry.Status and repeat with retry.Do")
}

// The scanners above find what exists, so that a pin that passes is not a
// pin that cannot fail.
func TestContractShellsScanners(t *testing.T) {
	srcs := moduleSources(t)
	if got := kindDecls(srcs, nil); len(got) == 0 {
		t.Error("kindDecls finds not even internal/stageerr's kinds")
	}
	if got := kindDecls(srcs, kindHome); len(got) != 0 {
		t.Errorf("kindDecls reports outside its home: %v", got)
	}
	if got := callsOutside(srcs, "os", "Getenv", nil); len(got) == 0 {
		t.Error("callsOutside finds no os.Getenv, not even cmd's")
	}
	_, runs := runShapes(srcs)
	if len(runs) != len(stagePackages) {
		t.Errorf("runShapes finds Run in %v, want every one of %v", runs, stagePackages)
	}
	for _, c := range []struct{ src, want string }{
		{"func(ctx context.Context, o Options) error", "(context.Context, Options) error"},
		{"func(ctx context.Context, be kernels.Backend, o Options, log io.Writer) error", "(context.Context, kernels.Backend, Options, io.Writer) error"},
		{"func(ctx context.Context, o Options) (Stats, error)", "(context.Context, Options) (Stats, error)"},
	} {
		if got := signature(parseFuncType(t, c.src)); got != c.want {
			t.Errorf("signature(%s) = %q, want %q", c.src, got, c.want)
		}
	}
	if !kindName.MatchString("ErrUsage") || kindName.MatchString("ErrUsageX") {
		t.Error("kindName matches the wrong names")
	}
	if !kindText.MatchString("usage") || !kindText.MatchString("bad input") || kindText.MatchString("trajectory: bad input") {
		t.Error("kindText matches the wrong messages")
	}
}

func parseFuncType(t *testing.T, src string) *ast.FuncType {
	t.Helper()
	e, err := parser.ParseExpr(src)
	if err != nil {
		t.Fatal(err)
	}
	return e.(*ast.FuncType)
}
