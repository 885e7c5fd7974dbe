package fileset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// touch creates the named files under dir, each holding its own name.
func touch(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func resolve(t *testing.T, args []string, opts Options) *Set {
	t.Helper()
	s, err := Resolve(context.Background(), args, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readAll(t *testing.T, s *Set, i int) string {
	t.Helper()
	f, err := s.Open(context.Background(), i)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "b.parquet", "a.parquet", "c.jsonl", ".hidden.parquet", ".a.parquet.tmp-1",
		"sub/d.parquet", "sub/e.parquet", "sub/f.txt", "sub/deeper/g.parquet")
	j := func(p string) string { return filepath.Join(dir, p) }
	for _, d := range []string{"empty", "x.parquet.d"} {
		if err := os.Mkdir(j(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(j("a.parquet"), j("sub/link.parquet")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"files keep order", []string{j("b.parquet"), j("a.parquet")}, []string{j("b.parquet"), j("a.parquet")}},
		{"glob sorted", []string{j("*.parquet")}, []string{j("a.parquet"), j("b.parquet")}},
		{"directory means the parquet files directly in it, links to files included", []string{j("sub")}, []string{j("sub/d.parquet"), j("sub/e.parquet"), j("sub/link.parquet")}},
		{"top directory skips hidden, non-parquet and folders", []string{dir}, []string{j("a.parquet"), j("b.parquet")}},
		{"hidden names only for a hidden pattern", []string{j(".*.parquet")}, []string{j(".hidden.parquet")}},
		{"mixed and deduplicated (sub/link.parquet is a.parquet)", []string{j("b.parquet"), j("*.parquet"), j("sub")},
			[]string{j("b.parquet"), j("a.parquet"), j("sub/d.parquet"), j("sub/e.parquet")}},
		{"glob over directories", []string{j("s*/*.parquet")}, []string{j("sub/d.parquet"), j("sub/e.parquet"), j("sub/link.parquet")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(t, tc.args, Options{}).Names(); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	// The extension is a parameter: from-jsonl reads the *.jsonl files.
	if got := resolve(t, []string{dir}, Options{Ext: ".jsonl"}).Names(); !slices.Equal(got, []string{j("c.jsonl")}) {
		t.Fatalf("jsonl dir: got %q", got)
	}
}

// A name that exists is taken as it is, glob characters and all. Before,
// the trajectory reader globbed every argument again: "round[1].parquet"
// read round1.parquet beside it, and alone it failed "glob matches no
// files".
func TestResolveTakesAnExistingNameLiterally(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "round[1].parquet")
	lit := filepath.Join(dir, "round[1].parquet")
	s := resolve(t, []string{lit}, Options{})
	if got := s.Names(); !slices.Equal(got, []string{lit}) {
		t.Fatalf("alone: got %q", got)
	}
	touch(t, dir, "round1.parquet")
	s = resolve(t, []string{lit}, Options{})
	if got := s.Names(); !slices.Equal(got, []string{lit}) {
		t.Fatalf("beside round1.parquet: got %q", got)
	}
	if got := readAll(t, s, 0); got != "round[1].parquet" {
		t.Fatalf("read %q, want the literal file's bytes", got)
	}
	// Once the literal file is gone the same argument is a glob.
	os.Remove(lit)
	if got := resolve(t, []string{lit}, Options{}).Names(); !slices.Equal(got, []string{filepath.Join(dir, "round1.parquet")}) {
		t.Fatalf("as a glob: got %q", got)
	}
}

func TestResolveErrors(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "a.parquet", "nested/deep/b.parquet")
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		mention string
	}{
		{"no args", nil, "no input given"},
		{"glob matches nothing", []string{filepath.Join(dir, "*.nope")}, "glob matches no files"},
		{"missing file", []string{filepath.Join(dir, "missing.parquet")}, "no such file"},
		{"empty directory", []string{filepath.Join(dir, "empty")}, "has no *.parquet files"},
		{"directory rule is flat", []string{filepath.Join(dir, "nested")}, "has no *.parquet files"},
		{"stdin twice", []string{"-", "-"}, "more than once"},
		{"bad pattern", []string{filepath.Join(dir, "[")}, "bad glob"},
		{"unknown scheme", []string{"ftp://host/round-1.parquet"}, "no support for ftp://"},
		{"remote file URL", []string{"file://example.com/x.parquet"}, "only local files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spool := t.TempDir()
			s, err := Resolve(context.Background(), tc.args, Options{Stdin: strings.NewReader("x"), TempDir: spool})
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrBadArgument) {
				t.Errorf("%v does not match ErrBadArgument", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
			for _, a := range tc.args {
				if !strings.Contains(err.Error(), a) {
					t.Errorf("error %q does not name the argument %q", err, a)
				}
			}
			if ents, _ := os.ReadDir(spool); len(ents) != 0 {
				t.Errorf("a failed Resolve left %d files in the spool folder", len(ents))
			}
		})
	}
}

// oneShot fails the test when read again after it reported io.EOF: stdin
// is read once, however often its input is opened.
type oneShot struct {
	t   *testing.T
	r   io.Reader
	eof bool
}

func (o *oneShot) Read(p []byte) (int, error) {
	if o.eof {
		o.t.Error("stdin read again after EOF")
	}
	n, err := o.r.Read(p)
	o.eof = err == io.EOF
	return n, err
}

func TestStdinCopiedOnce(t *testing.T) {
	dir, spoolDir := t.TempDir(), t.TempDir()
	touch(t, dir, "a.parquet")
	data := strings.Repeat("parquet bytes ", 10000)
	s, err := Resolve(context.Background(), []string{filepath.Join(dir, "a.parquet"), "-"},
		Options{Stdin: &oneShot{t: t, r: strings.NewReader(data)}, TempDir: spoolDir})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); len(got) != 2 || got[1] != Stdin {
		t.Fatalf("names %q", got)
	}
	for range 2 { // the reader opens each input twice: footers first, then rows
		if got := readAll(t, s, 1); got != data {
			t.Fatalf("read %d bytes from stdin's copy, want %d", len(got), len(data))
		}
	}
	f, err := s.Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != Stdin || f.Size != int64(len(data)) {
		t.Errorf("file %q of %d bytes", f.Name, f.Size)
	}
	f.Close()
	ents, _ := os.ReadDir(spoolDir)
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), ".hone-stdin.tmp-") {
		t.Errorf("spool folder holds %v while open, want one hidden temporary file", ents)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(spoolDir); len(ents) != 0 {
		t.Errorf("copy of stdin not removed: %v", ents)
	}
}

func TestStdinCancelledCopyLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := spool(ctx, strings.NewReader("x"), tmp); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
}

func TestStdinSequentialIsNotCopied(t *testing.T) {
	spoolDir := t.TempDir()
	in := strings.NewReader("{}\n")
	s := resolve(t, []string{"-"}, Options{Stdin: in, TempDir: spoolDir, Sequential: true})
	if s.Stdin() != in {
		t.Fatal("Stdin() is not the reader given")
	}
	if ents, _ := os.ReadDir(spoolDir); len(ents) != 0 || in.Len() != 3 {
		t.Errorf("stdin was copied: %v, %d bytes left", ents, in.Len())
	}
	f, err := s.Open(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
		t.Error("random access to stdin read in order")
	}
}

func fileURL(p string) string { return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String() }

func TestFileURLs(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "a b.parquet", "c.parquet", "sub/d.parquet")
	u := fileURL(dir)
	tests := []struct {
		arg  string
		want []string
	}{
		{u + "/c.parquet", []string{u + "/c.parquet"}},
		{u, []string{u + "/a%20b.parquet", u + "/c.parquet"}},
		{u + "/*/*.parquet", []string{u + "/sub/d.parquet"}},
		{"file://localhost" + filepath.ToSlash(dir) + "/c.parquet", []string{"file://localhost" + filepath.ToSlash(dir) + "/c.parquet"}},
	}
	for _, tc := range tests {
		s := resolve(t, []string{tc.arg}, Options{})
		if got := s.Names(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.arg, got, tc.want)
			continue
		}
		want := strings.TrimPrefix(tc.want[0], u+"/")
		if strings.HasPrefix(tc.arg, "file://localhost") {
			want = "c.parquet"
		}
		if got := readAll(t, s, 0); got != strings.ReplaceAll(want, "%20", " ") {
			t.Errorf("%s: read %q", tc.arg, got)
		}
	}
	out, err := Create(context.Background(), u+"/out.parquet")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(out, "written")
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.parquet")); string(b) != "written" {
		t.Errorf("file URL output holds %q", b)
	}
}

func TestUnknownSchemes(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"ftp://host/a.parquet", "hdfs://host/a.parquet", "HTTPS://host/a.parquet"} {
		scheme := strings.ToLower(name[:strings.Index(name, ":")])
		_, err := Open(ctx, name)
		_, cerr := Create(ctx, name)
		_, lerr := List(ctx, name, ".parquet")
		for _, e := range []error{err, cerr, lerr} {
			if !errors.Is(e, ErrBadArgument) || !strings.Contains(strings.ToLower(e.Error()), "no support for "+scheme+"://") || !strings.Contains(e.Error(), name) {
				t.Errorf("%s: %v", name, e)
			}
		}
	}
}

func TestFilesTakesNamesAsTheyAre(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "r[1].parquet", "r1.parquet")
	s := Files(filepath.Join(dir, "r[1].parquet"), filepath.Join(dir, "missing.parquet"))
	if got := readAll(t, s, 0); got != "r[1].parquet" {
		t.Errorf("read %q", got)
	}
	if _, err := s.Open(context.Background(), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Files("-").Open(context.Background(), 0); !errors.Is(err, ErrBadArgument) {
		t.Errorf("\"-\" outside Resolve: %v", err)
	}
}

func TestListEmptyFolderIsNotAnError(t *testing.T) {
	got, err := List(context.Background(), t.TempDir(), ".parquet")
	if err != nil || len(got) != 0 {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := List(context.Background(), filepath.Join(t.TempDir(), "nope"), ".parquet"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing folder: %v", err)
	}
}

func TestSetJSONIsItsNames(t *testing.T) {
	b, err := json.Marshal(struct {
		In *Set `json:"inputs,omitempty"`
	}{Files("a.parquet", "-")})
	if err != nil || string(b) != `{"inputs":["a.parquet","-"]}` {
		t.Fatalf("%s, %v", b, err)
	}
	var back struct {
		In *Set `json:"inputs"`
	}
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.In.Names(), []string{"a.parquet", "-"}) {
		t.Fatalf("read back %q, %v", back.In.Names(), err)
	}
	if err := json.Unmarshal([]byte(`{"inputs":"a.parquet"}`), &back); err == nil {
		t.Fatal("a string read as a set")
	}
}

// LocalPath gives a file:// URL's path and a path as it is, and refuses an
// object-store URL or a file URL of another host, naming it.
func TestLocalPath(t *testing.T) {
	dir := t.TempDir()
	for in, want := range map[string]string{
		dir:     dir,
		"rel/x": "rel/x",
		(&url.URL{Scheme: "file", Path: filepath.ToSlash(dir) + "/a b"}).String():                  filepath.Join(dir, "a b"),
		(&url.URL{Scheme: "file", Host: "localhost", Path: filepath.ToSlash(dir) + "/c"}).String(): filepath.Join(dir, "c"),
	} {
		if got, err := LocalPath(in); err != nil || got != want {
			t.Errorf("LocalPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"s3://b/adapters?region=x", "file://elsewhere/x"} {
		// Named as the user names it: an object's query is left out.
		if _, err := LocalPath(in); !errors.Is(err, ErrBadArgument) || !strings.Contains(err.Error(), DisplayName(in)) {
			t.Errorf("LocalPath(%q): %v", in, err)
		}
	}
}

// A file named twice is read once, however its two names are spelled:
// "./in/a.parquet" and the directory "./in/" (listed as "in/a.parquet"),
// an absolute path and a file:// URL. Before, only names equal as strings
// were merged, and the file was read twice (a duplicate-id error).
func TestResolveSameFileTwoSpellings(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "in/a.parquet", "in/b.parquet")
	t.Chdir(dir)
	abs := filepath.Join(dir, "in", "a.parquet")
	for _, tc := range []struct {
		args     []string
		want     []string
		repeated []string // Set.Repeated: the names passed over, as spelled
	}{
		{[]string{"./in/a.parquet", "./in/"}, []string{"./in/a.parquet", "in/b.parquet"}, []string{"in/a.parquet"}},
		{[]string{"in/a.parquet", "in//*.parquet"}, []string{"in/a.parquet", "in/b.parquet"}, []string{"in/a.parquet"}},
		{[]string{abs, "in/a.parquet", "file://" + abs}, []string{abs}, []string{"in/a.parquet", "file://" + abs}},
		{[]string{"in/b.parquet", "in/a.parquet"}, []string{"in/b.parquet", "in/a.parquet"}, nil},
	} {
		set := resolve(t, tc.args, Options{})
		if got := set.Names(); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
		if got := set.Repeated(); !slices.Equal(got, tc.repeated) {
			t.Errorf("%q: repeated %q, want %q", tc.args, got, tc.repeated)
		}
	}
}

// StatFile of a local file gives its size and modification time to the
// nanosecond the file system keeps; a folder or an absent name is an
// error (an absent one matching fs.ErrNotExist).
func TestStatFileLocal(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.parquet")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{p, "file://" + p} {
		fi, err := StatFile(ctx, name)
		if err != nil || fi.Size != 3 || !fi.ModTime.Equal(at) || fi.ETag != "" {
			t.Errorf("StatFile(%s) = %+v, %v; want size 3, time %v", name, fi, err, at)
		}
	}
	if _, err := StatFile(ctx, dir); err == nil {
		t.Errorf("StatFile of a folder: no error")
	}
	if _, err := StatFile(ctx, filepath.Join(dir, "none.parquet")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("StatFile of an absent file: %v, want fs.ErrNotExist", err)
	}
}

// TestResolveFollowsSymlinks: a symbolic link to a regular file is that
// file, in a folder as in a glob (as cat dir/* reads it): it was skipped
// in a folder, so `ln -s ../r1.parquet incoming/` was never read. A link
// to a folder is not descended into, and a link and its target named
// together are read once. A link whose target does not exist is named in
// an error, by a folder and a glob alike; one the extension leaves out
// does not matter.
func TestResolveFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "r1.parquet", "in/a.parquet", "sub/x.parquet")
	j := func(p string) string { return filepath.Join(dir, p) }
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, j(name)); err != nil {
			t.Fatal(err)
		}
	}
	link("../r1.parquet", "in/r1.parquet")
	link("../sub", "in/sub.parquet")
	link("../gone.txt", "in/notes.txt")
	want := []string{j("in/a.parquet"), j("in/r1.parquet")}
	for _, arg := range []string{j("in"), j("in/*.parquet")} {
		s := resolve(t, []string{arg}, Options{})
		if got := s.Names(); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", arg, got, want)
		}
		if len(s.Names()) == 2 {
			if got := readAll(t, s, 1); got != "r1.parquet" {
				t.Errorf("%s: the link reads %q, want its target's contents", arg, got)
			}
		}
		if got := resolve(t, []string{arg, j("r1.parquet")}, Options{}).Names(); !slices.Equal(got, want) {
			t.Errorf("%s and the link's target: got %q, want the target read once as %q", arg, got, want)
		}
	}
	link("../gone.parquet", "in/gone.parquet")
	for _, arg := range []string{j("in"), j("in/*.parquet")} {
		_, err := Resolve(context.Background(), []string{arg}, Options{})
		if !errors.Is(err, ErrBadArgument) || !strings.Contains(fmt.Sprint(err), j("in/gone.parquet")+": a symbolic link to ../gone.parquet, which does not exist") {
			t.Errorf("%s with a dangling link: %v, want a bad argument naming it", arg, err)
		}
	}
	names, err := DanglingLinks(context.Background(), j("in"), ".parquet")
	if err != nil || !slices.Equal(names, []string{j("in/gone.parquet") + " -> ../gone.parquet"}) {
		t.Errorf("DanglingLinks: %q %v", names, err)
	}
	if got, err := List(context.Background(), j("in"), ".parquet"); err != nil || !slices.Equal(got, want) {
		t.Errorf("List: %q %v, want %q: a dangling link is left to DanglingLinks", got, err, want)
	}
}

// TestResolveRefusesSymlinkLoop: a link that leads back to itself names
// no file, as a dangling one. A folder passed it over without a word (the
// file it was meant to bring went untrained) while a glob listed it and
// failed only when reading it; both now refuse it, naming the link.
func TestResolveRefusesSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "in/a.parquet")
	j := func(p string) string { return filepath.Join(dir, p) }
	for _, l := range [][2]string{{"l2.parquet", "in/l1.parquet"}, {"l1.parquet", "in/l2.parquet"}} {
		if err := os.Symlink(l[0], j(l[1])); err != nil {
			t.Fatal(err)
		}
	}
	want := j("in/l1.parquet") + ": a symbolic link to l2.parquet, which leads back to itself (a loop of symbolic links)"
	for _, arg := range []string{j("in"), j("in/*.parquet")} {
		_, err := Resolve(context.Background(), []string{arg}, Options{})
		if !errors.Is(err, ErrBadArgument) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%s with a loop of links: %v, want a bad argument saying %q", arg, err, want)
		}
	}
}

// TestResolveRefusesSymlinkThroughAFile: a link whose target runs through
// a file as if it were a folder (a.parquet/x.parquet) names no file, as a
// dangling one: a folder passed it over without a word (stat says "not a
// directory", not "does not exist") and a glob listed it, failing only
// when read; both now refuse it, naming the link.
func TestResolveRefusesSymlinkThroughAFile(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "in/a.parquet")
	link := filepath.Join(dir, "in", "l.parquet")
	if err := os.Symlink("a.parquet/x.parquet", link); err != nil {
		t.Fatal(err)
	}
	want := link + ": a symbolic link to a.parquet/x.parquet, which does not exist"
	for _, arg := range []string{filepath.Join(dir, "in"), filepath.Join(dir, "in", "*.parquet")} {
		_, err := Resolve(context.Background(), []string{arg}, Options{})
		if !errors.Is(err, ErrBadArgument) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%s with a link through a file: %v, want a bad argument saying %q", arg, err, want)
		}
	}
}
