package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestWatchFollowsSymlinks runs hone-train grpo --watch-dir as a process on
// a folder of symbolic links (ln -s ../r1.parquet incoming/): the file a
// link names is trained, which a listing that skipped links never did
// ("nothing new"). The link retargeted to another file of the same size
// and modification time trains that file: the manifest's stat of the
// link's path is of the file it named then. A link whose target does not
// exist yet is named in a warning and left for a later call; named as a
// folder input, it is refused (exit 2).
func TestWatchFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	r1, r2 := filepath.Join(dir, "r1.parquet"), filepath.Join(dir, "r2.parquet")
	writeSplits(t, r1, "train", "train")
	writeSplits(t, r2, "train", "train")
	old := time.Now().Add(-time.Hour) // well past the manifest's racy window
	for _, f := range []string{r1, r2} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	s1, _ := os.Stat(r1)
	s2, _ := os.Stat(r2)
	if s1.Size() != s2.Size() {
		t.Fatalf("r1 and r2 are %d and %d bytes: the test needs one size", s1.Size(), s2.Size())
	}
	in := filepath.Join(dir, "incoming")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(in, "cur.parquet")
	if err := os.Symlink("../r1.parquet", cur); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "adapters")
	grpo := func() (int, string) {
		return runMain(t, "grpo", "--model", md, "--run", "w", "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", "--watch-dir", in)
	}
	run := filepath.Join(out, "w")
	if code, msg := grpo(); code != 0 || len(stepMetrics(t, run)) != 1 {
		t.Fatalf("a link to r1: exit %d, want one step trained\n%s", code, msg)
	}
	if err := os.Remove(cur); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../r2.parquet", cur); err != nil {
		t.Fatal(err)
	}
	if code, msg := grpo(); code != 0 || len(stepMetrics(t, run)) != 2 {
		t.Fatalf("the link retargeted to r2: exit %d, want a second step\n%s", code, msg)
	}
	if err := os.Symlink("../r3.parquet", filepath.Join(in, "late.parquet")); err != nil {
		t.Fatal(err)
	}
	code, msg := grpo()
	if code != 0 || !strings.Contains(msg, "late.parquet -> ../r3.parquet") || !strings.Contains(msg, "nothing new") || len(stepMetrics(t, run)) != 2 {
		t.Errorf("a dangling link: exit %d, want 0 naming it, nothing new\n%s", code, msg)
	}
	code, msg = runMain(t, "grpo", "--model", md, "--run", "once", "--out", out, "--rank", "2", "--threads", "1", in)
	if code != cli.ExitUsage || !strings.Contains(msg, filepath.Join(in, "late.parquet")+": a symbolic link to ../r3.parquet, which does not exist") {
		t.Errorf("the folder as input: exit %d, want %d naming the dangling link\n%s", code, cli.ExitUsage, msg)
	}
}
