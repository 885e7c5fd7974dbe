// Package hone holds the repository-wide policy test; the code lives in the
// packages below this directory (see README.md and DESIGN.md).
package hone

import (
	"go/build"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/hone-rl/hone"

// allowedImports says, for each folder of ours, which other folders of ours its
// packages may import (STYLE.md "Imports go one way"). A package matches the
// longest prefix listed. Imports inside the same top entry (format/* importing
// format/*) are allowed unless the entry says otherwise. Third-party and
// standard-library imports are not restricted here.
var allowedImports = []struct {
	prefix string
	may    []string
}{
	{"format", nil},
	{"kernels", nil},
	{"train/model", []string{"format", "kernels"}},
	{"train", []string{"train/model", "format", "kernels", "internal/flagval", "internal/stageerr", "internal/waitfor"}},
	{"serve", []string{"train/model", "format", "kernels", "internal/stageerr", "internal/waitfor"}},
	{"collect", []string{"format", "internal/flagval", "internal/stageerr", "internal/retry", "internal/waitfor", "internal/gobuild", "internal/procgroup", "internal/servedmodels"}},
	{"score", []string{"format", "internal/flagval", "internal/stageerr", "internal/retry", "internal/servedmodels", "internal/waitfor"}},
	{"internal", []string{"format", "kernels"}},
	// The kinds of error every stage returns and cmd maps to exit codes,
	// and the retry decorator of collect's and score's clients: each
	// stage's shared process conventions, so they import nothing of ours.
	{"internal/stageerr", nil},
	{"internal/retry", nil},
	// A program started with the processes it starts, stopped as one:
	// collect's stdio and MCP environments, the local runner's steps.
	{"internal/procgroup", nil},
	// The models an OpenAI-compatible server lists, quoted by collect's
	// and score's error for a model the server does not serve.
	{"internal/servedmodels", nil},
	// The tests' one way to wait for a condition, and their one way to
	// build the commands they run (imported by tests only).
	{"internal/waitfor", nil},
	{"internal/gobuild", nil},
	{"cmd", []string{""}}, // everything
	// The local runner of the cluster manifests tests a round against the
	// in-process S3 server, and reads what the round left there; it stops
	// a step as a whole process group.
	{"pipelines", []string{"format", "internal/fakes3d", "internal/waitfor", "internal/gobuild", "internal/procgroup"}},
}

// rule returns the policy entry for a package path relative to the module.
func rule(rel string) (prefix string, may []string, ok bool) {
	best := -1
	for i, r := range allowedImports {
		if rel == r.prefix || strings.HasPrefix(rel, r.prefix+"/") {
			if best < 0 || len(r.prefix) > len(allowedImports[best].prefix) {
				best = i
			}
		}
	}
	if best < 0 {
		return "", nil, false
	}
	return allowedImports[best].prefix, allowedImports[best].may, true
}

func under(rel, prefix string) bool {
	return prefix == "" || rel == prefix || strings.HasPrefix(rel, prefix+"/")
}

// allowedEdge reports whether package rel may import package target (both
// relative to the module): packages may import their own folder, and what
// their folder's entry lists.
func allowedEdge(rel, target string) bool {
	top, may, ok := rule(rel)
	if !ok {
		return false
	}
	if under(target, top) {
		return true
	}
	for _, m := range may {
		if under(target, m) {
			return true
		}
	}
	return false
}

// notCode reports whether the folder at path (named name) holds no package
// of ours: hidden folders, test data, node packages and built binaries.
// out/ and runs/ at the top are the demo's and the user's outputs
// (ignored by git, as bin/ is): make pipeline leaves out/ behind.
func notCode(path, name string) bool {
	return path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin" ||
		path == "out" || path == "runs")
}

func TestImportPolicy(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if notCode(path, d.Name()) {
				return filepath.SkipDir
			}
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "cuda") // check tagged files too
	checked := 0
	for _, dir := range dirs {
		pkg, err := ctx.ImportDir(dir, build.ImportComment)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				continue
			}
			t.Errorf("%s: %v", dir, err)
			continue
		}
		rel := filepath.ToSlash(dir)
		if rel == "." {
			continue
		}
		top, _, ok := rule(rel)
		if !ok {
			t.Errorf("%s: package is in no folder of the import policy; add it to allowedImports in policy_test.go (DESIGN.md \"Folders\")", rel)
			continue
		}
		checked++
		imports := append(append(append([]string{}, pkg.Imports...), pkg.TestImports...), pkg.XTestImports...)
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			target := strings.TrimPrefix(imp, module+"/")
			if !allowedEdge(rel, target) {
				_, may, _ := rule(rel)
				t.Errorf("%s imports %s: not allowed by STYLE.md \"Imports go one way\" (%s may import its own folder and %v)", rel, target, top, may)
			}
		}
	}
	if checked == 0 {
		t.Fatal("policy test checked no package")
	}
}

func TestImportPolicyRules(t *testing.T) {
	cases := []struct {
		pkg, imp string
		ok       bool
	}{
		{"format/tokenizer", "format/trajectory", true},
		{"format/trajectory", "kernels", false},
		{"kernels/cpu", "kernels", true},
		{"kernels/cpu", "format/safetensors", false},
		{"train/model", "kernels", true},
		{"train/model", "train/grpo", false},
		{"train/grpo", "train/model", true},
		{"serve/engine", "train/model", true},
		{"serve/engine", "train/grpo", false},
		{"collect/env", "score/ruler", false},
		{"score/ruler", "collect/env", false},
		{"collect/env", "format/trajectory", true},
		{"cmd/hone-score", "score/ruler", true},
		{"internal/bench/x", "format/trajectory", true},
		{"internal/bench/x", "train/model", false},
		{"collect", "internal/flagval", true},
		{"score", "internal/flagval", true},
		{"train/grpojob", "internal/flagval", true},
		{"collect", "internal/report", false},
		{"collect", "internal/stageerr", true},
		{"score/judge", "internal/retry", true},
		{"collect", "internal/retry", true},
		{"train/grpojob", "internal/stageerr", true},
		{"train/model", "internal/stageerr", false},
		{"serve", "internal/stageerr", true},
		{"serve", "internal/retry", false},
		{"internal/stageerr", "format/trajectory", false},
		{"internal/retry", "kernels", false},
		{"cmd/internal/cli", "internal/stageerr", true},
	}
	for _, c := range cases {
		got := allowedEdge(c.pkg, c.imp)
		if got != c.ok {
			t.Errorf("%s → %s: allowed=%v, want %v", c.pkg, c.imp, got, c.ok)
		}
	}
}
