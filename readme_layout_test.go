package hone

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The README's Layout table is the map of the module: every folder it
// lists exists, and every package folder is on it, either as a row of its
// own or named (in backquotes, by its path or by its path below the row's
// folder) in the row of a folder above it.

// layoutRow is one row of the Layout table: the folders of its first
// column and the backquoted words of the whole row.
type layoutRow struct {
	folders []string // slash-separated, without the trailing slash
	words   map[string]bool
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// readmeLayout parses the table under "## Layout" in readme.
func readmeLayout(t *testing.T, readme string) []layoutRow {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []layoutRow
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		r := layoutRow{words: map[string]bool{}}
		for _, m := range backquoted.FindAllStringSubmatch(cells[1], -1) {
			r.folders = append(r.folders, strings.TrimSuffix(m[1], "/"))
		}
		for _, m := range backquoted.FindAllStringSubmatch(line, -1) {
			r.words[strings.TrimSuffix(m[1], "/")] = true
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("README.md's Layout section has no table rows")
	}
	return rows
}

// unlisted returns the folders of pkgs that rows neither list nor name in
// the row of a folder above them. A top-level folder is also mapped by a
// row of a folder below it (internal/ by internal/retry/).
func unlisted(rows []layoutRow, pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		found := false
		for _, r := range rows {
			for _, f := range r.folders {
				if p == f || strings.HasPrefix(p, f+"/") && (r.words[p] || r.words[strings.TrimPrefix(p, f+"/")]) ||
					!strings.Contains(p, "/") && strings.HasPrefix(f, p+"/") {
					found = true
				}
			}
		}
		if !found {
			out = append(out, p)
		}
	}
	return out
}

// packageFolders lists the module's folders holding Go files, and its
// top-level folders, slash-separated.
func packageFolders(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if notCode(path, d.Name()) {
				return filepath.SkipDir
			}
			if path != "." && !strings.Contains(filepath.ToSlash(path), "/") {
				seen[filepath.ToSlash(path)] = true
			}
			return nil
		}
		if dir := filepath.Dir(path); dir != "." && strings.HasSuffix(path, ".go") {
			seen[filepath.ToSlash(dir)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func TestReadmeLayout(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := readmeLayout(t, string(b))
	for _, r := range rows {
		for _, f := range r.folders {
			if st, err := os.Stat(filepath.FromSlash(f)); err != nil || !st.IsDir() {
				t.Errorf("README.md's Layout lists %s/, which is not a folder of the module", f)
			}
		}
	}
	for _, p := range unlisted(rows, packageFolders(t)) {
		t.Errorf("README.md's Layout does not name %s/ (a row of its own, or `%s` in the row of a folder above it)", p, filepath.Base(p))
	}
}

// TestReadmeLayoutScanner: the scanner misses what a table leaves out, so
// that a pin that passes is not a pin that cannot fail.
func TestReadmeLayoutScanner(t *testing.T) {
	rows := readmeLayout(t, "x\n## Layout\n\n| folder | owns |\n| --- | --- |\n| `a/` | the `a/b` thing and `c` |\n| `d/e/` | e |\n## Next\n| `z/` | z |\n")
	got := unlisted(rows, []string{"a", "a/b", "a/c", "a/c/x", "a/f", "d", "d/e", "d/e/g", "d/h", "z"})
	if strings.Join(got, " ") != "a/c/x a/f d/e/g d/h z" {
		t.Errorf("unlisted = %v, want [a/c/x a/f d/e/g d/h z]", got)
	}
}
