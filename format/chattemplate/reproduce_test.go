package chattemplate

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGoldenReproducible reruns js/golden.mjs on a copy of
// testdata/templates and checks it writes exactly the committed golden
// files. It needs node and `npm ci` in testdata/templates/js; without them
// it skips, except under CI where it fails.
func TestGoldenReproducible(t *testing.T) {
	src, err := filepath.Abs(templatesDir)
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	modules := filepath.Join(src, "js", "node_modules", "@huggingface", "jinja")
	if _, serr := os.Stat(modules); err != nil || serr != nil {
		msg := "needs node and `npm ci` in testdata/templates/js"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dst := t.TempDir()
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel == filepath.Join("js", "node_modules") || rel == "golden" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(src, "js", "node_modules"), filepath.Join(dst, "js", "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "golden.mjs")
	cmd.Dir = filepath.Join(dst, "js")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node golden.mjs: %v\n%s", err, out)
	}
	n := 0
	err = filepath.WalkDir(filepath.Join(dst, "golden"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dst, "golden"), p)
		got, _ := os.ReadFile(p)
		want, err := os.ReadFile(filepath.Join(src, "golden", rel))
		if err != nil {
			t.Errorf("golden.mjs writes %s, which is not committed (%s)", rel, rerun)
			return nil
		}
		if rel == "PROVENANCE.json" { // names the node version; compare the rest
			got, want = dropLine(got, `"node":`), dropLine(want, `"node":`)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("golden.mjs now writes a different %s (%s)", rel, rerun)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("golden.mjs wrote %d files", n)
	}
}

func dropLine(b []byte, prefix string) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), prefix) {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n"))
}
