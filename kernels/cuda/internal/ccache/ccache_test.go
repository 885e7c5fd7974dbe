package ccache

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// needCC returns the C compiler the tests use (gcc), skipping without one
// unless CI is set.
func needCC(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no C compiler: %v", err)
		}
		t.Fatal(err)
	}
	return "gcc"
}

// program writes a C program that prints the value its header defines,
// returning the compile's arguments (the header's folder on -I, stdin as
// the source) and the header's path.
func program(t *testing.T, value string) (args []string, header string) {
	dir := t.TempDir()
	header = filepath.Join(dir, "value.h")
	writeFile(t, header, "#define VALUE \""+value+"\"\n")
	return []string{"-x", "c", "-I", dir, "-"}, header
}

const source = "#include <stdio.h>\n#include \"value.h\"\nint main(void) { puts(VALUE); return 0; }\n"

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runs runs the program at path and checks it prints want.
func runs(t *testing.T, path, want string) {
	t.Helper()
	got, err := exec.Command(path).Output()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("%s printed %q, want %q", path, got, want)
	}
}

func compile(t *testing.T, c Cache, cc string, args []string, want string, wantHit bool) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "prog")
	hit, err := c.Compile(context.Background(), cc, args, source, out)
	if err != nil {
		t.Fatal(err)
	}
	if hit != wantHit {
		t.Fatalf("hit %v, want %v", hit, wantHit)
	}
	runs(t, out, want)
}

// TestCompileHitAndMiss: the second compile of the same text is a hit that
// gives the same program; an edit to an included header (not the source,
// not the arguments) misses and gives the new program.
func TestCompileHitAndMiss(t *testing.T) {
	cc := needCC(t)
	c := Cache{Dir: t.TempDir()}
	args, header := program(t, "one")
	compile(t, c, cc, args, "one", false)
	compile(t, c, cc, args, "one", true)
	writeFile(t, header, "#define VALUE \"two\"\n")
	compile(t, c, cc, args, "two", false)
	compile(t, c, cc, args, "two", true)
	compile(t, c, cc, append([]string{"-O1"}, args...), "two", false) // other flags, other key
}

// TestCompileOff: the zero Cache compiles every time.
func TestCompileOff(t *testing.T) {
	cc := needCC(t)
	args, _ := program(t, "off")
	compile(t, Cache{}, cc, args, "off", false)
	compile(t, Cache{}, cc, args, "off", false)
}

// TestCompileErrorNotCached: a compile that fails says why, in the
// compiler's words, fails again the next time, and leaves no entry.
func TestCompileErrorNotCached(t *testing.T) {
	cc := needCC(t)
	c := Cache{Dir: t.TempDir()}
	for range 2 {
		hit, err := c.Compile(context.Background(), cc, []string{"-x", "c", "-"}, "int main(void) { return undeclared_name; }\n", filepath.Join(t.TempDir(), "prog"))
		if err == nil || hit || !strings.Contains(err.Error(), "undeclared_name") {
			t.Fatalf("hit %v, err %v: want a miss whose error names undeclared_name", hit, err)
		}
	}
	ents, err := os.ReadDir(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("entry %s left by a failed compile", e.Name())
		}
	}
}

// TestCompileConcurrentMisses: compiles of one key at once run the
// compiler once; the others wait and copy its output.
func TestCompileConcurrentMisses(t *testing.T) {
	cc := needCC(t)
	c := Cache{Dir: t.TempDir()}
	args, _ := program(t, "together")
	const n = 4
	var wg sync.WaitGroup
	hits := make([]bool, n)
	outs := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		outs[i] = filepath.Join(t.TempDir(), "prog")
		wg.Go(func() { hits[i], errs[i] = c.Compile(context.Background(), cc, args, source, outs[i]) })
	}
	wg.Wait()
	misses := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !hits[i] {
			misses++
		}
		runs(t, outs[i], "together")
	}
	if misses != 1 {
		t.Fatalf("%d of %d compiles ran the compiler, want 1", misses, n)
	}
}

// TestCompileTrims: storing an entry removes those unused for longer than
// a week, and only those.
func TestCompileTrims(t *testing.T) {
	cc := needCC(t)
	c := Cache{Dir: t.TempDir()}
	old, recent := filepath.Join(c.Dir, "old"), filepath.Join(c.Dir, "recent")
	writeFile(t, old, "x")
	writeFile(t, recent, "x")
	long := time.Now().Add(-keep - time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	args, _ := program(t, "trim")
	compile(t, c, cc, args, "trim", false)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("an entry unused for over a week is still there (%v)", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("a recent entry was removed: %v", err)
	}
}

// TestCompileUnusableDir: a cache folder that cannot be made still
// compiles.
func TestCompileUnusableDir(t *testing.T) {
	cc := needCC(t)
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "not a folder")
	args, _ := program(t, "nodir")
	compile(t, Cache{Dir: filepath.Join(file, "cache")}, cc, args, "nodir", false)
}

func TestDefault(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/some/where")
	if got := Default(); got.Dir != "/some/where/hone-ccache" {
		t.Errorf("Dir %q, want /some/where/hone-ccache", got.Dir)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if got := Default(); got.Dir != "" {
		t.Errorf("no user cache folder: Dir %q, want none", got.Dir)
	}
}
