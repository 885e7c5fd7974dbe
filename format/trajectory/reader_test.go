package trajectory

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// writeRaw writes rows of any struct type with parquet-go directly, for
// files our Writer would never produce.
func writeRaw[T any](t *testing.T, path string, rows []T, kv ...string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := []parquet.WriterOption{parquet.Compression(&zstd.Codec{})}
	for i := 0; i+1 < len(kv); i += 2 {
		opts = append(opts, parquet.KeyValueMetadata(kv[i], kv[i+1]))
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// rowPlus is a future writer's row: every column of ours plus new ones.
type rowPlus struct {
	row
	Extra      string            `parquet:"extra_column"`
	ExtraList  []int64           `parquet:"extra_list,list"`
	ExtraInner []struct{ A int } `parquet:"extra_inner,list"`
}

func TestExtraColumnsIgnored(t *testing.T) {
	groups := sampleGroups(4, 3, 2)
	var rows []rowPlus
	for _, g := range groups {
		for i := range g.Trajectories {
			r := toRow(&g.Trajectories[i])
			r.GroupMetadata, r.GroupMetrics = g.Metadata, g.Metrics
			rows = append(rows, rowPlus{row: r, Extra: "x", ExtraList: []int64{1, 2}})
		}
	}
	path := filepath.Join(t.TempDir(), "extra.parquet")
	writeRaw(t, path, rows, MetadataKeySchemaVersion, strconv.Itoa(SchemaVersion))
	// Make sure the extra columns really are in the file.
	f, _ := os.Open(path)
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pf.Schema().Lookup("extra_column"); !ok {
		t.Fatal("test file lacks extra_column")
	}
	f.Close()
	got, err := ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	diffGroups(t, groups, got)
}

// rowMissing lacks env and has step as a string.
type rowMissing struct {
	Run          string `parquet:"run"`
	Step         string `parquet:"step"`
	GroupID      string `parquet:"group_id"`
	TrajectoryID string `parquet:"trajectory_id"`
}

func TestMissingAndMistypedColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.parquet")
	writeRaw(t, path, []rowMissing{{Run: "r", Step: "1", GroupID: "g", TrajectoryID: "a"}})
	_, err := Open(context.Background(), fileset.Files(path))
	if err == nil {
		t.Fatal("opened a file with missing columns")
	}
	for _, want := range []string{path, "column env: missing", "column step: type BYTE_ARRAY, want INT64", "column messages.list.element.token_ids.list.element: missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not mention %q", err, want)
		}
	}
}

func TestNewerSchemaVersion(t *testing.T) {
	g := sampleGroups(5, 1, 1)[0]
	path := filepath.Join(t.TempDir(), "next.parquet")
	next := strconv.Itoa(SchemaVersion + 1)
	writeRaw(t, path, []row{toRow(&g.Trajectories[0])}, MetadataKeySchemaVersion, next)
	_, err := Open(context.Background(), fileset.Files(path))
	if err == nil || !strings.Contains(err.Error(), "schema version "+next) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming the file and schema version %s", err, next)
	}
	writeRaw(t, path, []row{toRow(&g.Trajectories[0])}, MetadataKeySchemaVersion, "two")
	if _, err := Open(context.Background(), fileset.Files(path)); err == nil || !strings.Contains(err.Error(), `"two"`) {
		t.Fatalf("error %v, want one about the bad version", err)
	}
}

func readErr(t *testing.T, paths ...string) error {
	t.Helper()
	_, err := ReadAll(context.Background(), fileset.Files(paths...))
	if err == nil {
		t.Fatal("read succeeded, want an error")
	}
	return err
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q\ndoes not mention %q", err, p)
		}
	}
}

func TestInputSetChecks(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.parquet")
	b := filepath.Join(dir, "b.parquet")
	one := func(gid, tid string) Group { return Group{ID: gid, Trajectories: []Trajectory{{ID: tid}}} }
	ctx := context.Background()

	t.Run("duplicate trajectory id across files", func(t *testing.T) {
		WriteFile(ctx, a, []Group{one("g1", "x"), one("g2", "y")}, WriterOptions{})
		WriteFile(ctx, b, []Group{one("g3", "y")}, WriterOptions{})
		mustContain(t, readErr(t, a, b), b, "row 0", `group "g3"`, `trajectory_id "y"`, a+" row 1")
	})
	t.Run("group split across files", func(t *testing.T) {
		WriteFile(ctx, a, []Group{one("g1", "x")}, WriterOptions{})
		WriteFile(ctx, b, []Group{one("g0", "z"), one("g1", "y")}, WriterOptions{})
		mustContain(t, readErr(t, a, b), `group "g1" split across files`, a, b+" (row 1)")
	})
	t.Run("group not contiguous in a file", func(t *testing.T) {
		p := filepath.Join(dir, "nc.parquet")
		writeRaw(t, p, []row{{GroupID: "g1", TrajectoryID: "a"}, {GroupID: "g2", TrajectoryID: "b"}, {GroupID: "g1", TrajectoryID: "c"}})
		mustContain(t, readErr(t, p), p, `group "g1"`, "not contiguous")
	})
	t.Run("bad row", func(t *testing.T) {
		p := filepath.Join(dir, "bad.parquet")
		writeRaw(t, p, []row{{GroupID: "g1", TrajectoryID: "a"}, {GroupID: "g1", TrajectoryID: "b", Split: "bogus"}})
		mustContain(t, readErr(t, p), p, "row 1", `group "g1"`, `trajectory "b"`, "split")
	})
	t.Run("same file twice", func(t *testing.T) {
		WriteFile(ctx, a, []Group{one("g1", "x")}, WriterOptions{})
		mustContain(t, readErr(t, a, a), "duplicates")
	})
	t.Run("Validate", func(t *testing.T) {
		WriteFile(ctx, a, []Group{one("g1", "x")}, WriterOptions{})
		WriteFile(ctx, b, []Group{one("g2", "y")}, WriterOptions{})
		if err := Validate(ctx, fileset.Files(a, b)); err != nil {
			t.Fatal(err)
		}
		WriteFile(ctx, b, []Group{one("g2", "x")}, WriterOptions{})
		if err := Validate(ctx, fileset.Files(a, b)); err == nil {
			t.Fatal("Validate missed a duplicate id")
		}
	})
}

// resolveSet resolves args with fileset, as every stage does, and closes
// the set when the test ends.
func resolveSet(t *testing.T, args []string, opts fileset.Options) *fileset.Set {
	t.Helper()
	in, err := fileset.Resolve(context.Background(), args, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// Open reads what fileset resolved, in its order, and nothing else: the
// directory rule, globs and stdin are fileset's, applied once.
func TestOpenResolvedSet(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	all := sampleGroups(6, 6, 2)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	for i, name := range []string{"step-1.parquet", "sub/step-2.parquet", "step-3.parquet"} {
		if err := WriteFile(ctx, filepath.Join(dir, name), all[2*i:2*i+2], WriterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Files a directory input skips: a temporary output, other suffixes.
	os.WriteFile(filepath.Join(dir, ".step-4.parquet.tmp-1"), []byte("partial"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("junk"), 0o644)

	count := func(args ...string) int {
		t.Helper()
		groups, err := ReadAll(ctx, resolveSet(t, args, fileset.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		return len(groups)
	}
	if n := count(dir); n != 4 {
		t.Errorf("directory: %d groups, want 4 (step-1 and step-3; sub/ is not read)", n)
	}
	if n := count(filepath.Join(dir, "step-*.parquet"), filepath.Join(dir, "sub")); n != 6 {
		t.Errorf("glob and folder: %d groups, want 6", n)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "sub/step-2.parquet"))
	spoolDir := t.TempDir()
	in := resolveSet(t, []string{"-", filepath.Join(dir, "step-1.parquet")}, fileset.Options{Stdin: bytes.NewReader(data), TempDir: spoolDir})
	r, err := Open(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if fs := r.Files(); fs[0].Path != "-" || fs[1].Rows != 4 {
		t.Errorf("files %+v", fs)
	}
	n := 0
	for {
		_, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Errorf("stdin + file: %d groups, want 4", n)
	}
	r.Close()
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(spoolDir); len(ents) != 0 {
		t.Errorf("copy of stdin not removed: %v", ents)
	}
	for _, bad := range [][]string{{filepath.Join(dir, "missing.parquet")}, {}} {
		if _, err := Open(ctx, fileset.Files(bad...)); !errors.Is(err, ErrBadInput) {
			t.Errorf("Open(%q): %v, want bad input", bad, err)
		}
	}
	if _, err := Open(ctx, fileset.Files(filepath.Join(dir, "notes.txt"))); err == nil ||
		!strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("non-parquet file: %v", err)
	}
}

// A file whose name holds glob characters is read as named. The reader
// used to glob every argument again after the cli had resolved it:
// "round[1].parquet" then read round1.parquet beside it, and alone failed
// with "glob matches no files".
func TestOpenReadsALiteralNameWithGlobCharacters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	all := sampleGroups(8, 3, 2)
	lit := filepath.Join(dir, "round[1].parquet")
	if err := WriteFile(ctx, lit, all[:1], WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, beside := range []bool{false, true} {
		if beside {
			if err := WriteFile(ctx, filepath.Join(dir, "round1.parquet"), all[1:], WriterOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := ReadAll(ctx, resolveSet(t, []string{lit}, fileset.Options{}))
		if err != nil {
			t.Fatalf("round1.parquet beside: %v: %v", beside, err)
		}
		if len(got) != 1 || got[0].ID != all[0].ID {
			t.Fatalf("round1.parquet beside: %v: read %d groups, want the literal file's one", beside, len(got))
		}
	}
}

// TestContentPartsMustBeContent: content_parts holds content that was not a
// string, so null or a list of content parts, as the import makes it. Any
// other JSON ({"a":1}, 42) passed Validate, the Writer and `hone-inspect
// validate`, and to-jsonl wrote it as the message's content, which
// from-jsonl then refused ("content: expected a string or an array of
// content parts, got an object"). The file is now refused where it is
// read, naming the row and field, and the Writer refuses to write it.
func TestContentPartsMustBeContent(t *testing.T) {
	for _, parts := range []string{`{"a":1}`, `42`, `[1]`, `[{"type":"text","text":2}]`} {
		tr := Trajectory{ID: "a", GroupID: "g", Messages: []Message{{Role: "user", Content: "x"}, {Role: "user", Content: "x", ContentParts: parts}}}
		err := tr.Validate()
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != "messages[1].content_parts" {
			t.Errorf("%s: Validate %v", parts, err)
		}
		if err := NewWriter(io.Discard, WriterOptions{}).WriteGroup(context.Background(), Group{ID: "g", Trajectories: []Trajectory{tr}}); err == nil {
			t.Errorf("%s: WriteGroup took it", parts)
		}
		path := filepath.Join(t.TempDir(), "parts.parquet")
		writeRaw(t, path, []row{toRow(&tr)}, MetadataKeySchemaVersion, strconv.Itoa(SchemaVersion))
		err = readErr(t, path)
		if !errors.As(err, &ie) || ie.File != path || ie.Row != 0 || ie.Field != "messages[1].content_parts" {
			t.Errorf("%s: read %v", parts, err)
		}
	}
	for _, parts := range []string{`null`, `[]`, `[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"u"}}]`} {
		tr := Trajectory{ID: "a", GroupID: "g", Messages: []Message{{Role: "user", Content: "x", ContentParts: parts}}}
		if err := tr.Validate(); err != nil {
			t.Errorf("%s: %v", parts, err)
		}
	}
}

// Where names the file and first row of each group Next returned, counted
// as bad-input errors count rows, and nothing for a group not yet read.
func TestWhere(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	all := sampleGroups(7, 4, 3) // four groups of three rows
	if err := WriteFile(ctx, a, all[:2], WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(ctx, b, all[2:], WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, resolveSet(t, []string{a, b}, fileset.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, ok := r.Where(all[0].ID); ok {
		t.Fatalf("Where(%q) before Next: ok", all[0].ID)
	}
	want := []struct {
		file string
		row  int64
	}{{a, 0}, {a, 3}, {b, 0}, {b, 3}}
	for i, w := range want {
		g, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		file, row, ok := r.Where(g.ID)
		if !ok || file != w.file || row != w.row {
			t.Errorf("group %d (%q): Where = %s, %d, %v; want %s, %d", i, g.ID, file, row, ok, w.file, w.row)
		}
	}
	if _, _, ok := r.Where("no such group"); ok {
		t.Error(`Where("no such group"): ok`)
	}
}

// TestJSONLinesNamedAsJSON: a JSON Lines file where a trajectory file is
// read is said to be JSON, with the call that converts it, also when it
// starts with a UTF-8 byte-order mark or blank lines (an editor's, a
// Windows tool's); those got the "truncated, or not Parquet" of a file cut
// short.
func TestJSONLinesNamedAsJSON(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"plain.jsonl":  `{"messages": []}` + "\n",
		"bom.jsonl":    "\xef\xbb\xbf" + `{"messages": []}` + "\n",
		"blank.jsonl":  "\n\r\n  " + `{"messages": []}` + "\n",
		"array.json":   `[{"messages": []}]`,
		"binary.jsonl": "\xef\xbb\xbfnot json at all, and long enough",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		err := readErr(t, path)
		if name == "binary.jsonl" {
			mustContain(t, err, path, "not Parquet")
			if strings.Contains(err.Error(), "JSON, not") {
				t.Errorf("%s: %v, called JSON", name, err)
			}
			continue
		}
		mustContain(t, err, path, "JSON, not Parquet", "hone-inspect from-jsonl -o NEW.parquet FILE")
	}
}
