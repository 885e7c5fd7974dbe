package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// touch creates the named files under dir and returns their paths.
func touch(t *testing.T, dir string, names ...string) []string {
	t.Helper()
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func TestExpandInputs(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "b.parquet", "a.parquet", "c.jsonl", ".hidden.parquet", "sub/d.parquet", "sub/e.parquet", "sub/f.txt")
	j := func(p string) string { return filepath.Join(dir, p) }
	if err := os.Mkdir(j("empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(j("x.parquet.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"files keep order", []string{j("b.parquet"), j("a.parquet")}, []string{j("b.parquet"), j("a.parquet")}},
		{"glob sorted", []string{j("*.parquet")}, []string{j("a.parquet"), j("b.parquet")}},
		{"directory means its parquet files", []string{j("sub")}, []string{j("sub/d.parquet"), j("sub/e.parquet")}},
		{"top directory skips hidden and non-parquet", []string{dir}, []string{j("a.parquet"), j("b.parquet")}},
		{"stdin", []string{"-"}, []string{"-"}},
		{"mixed and deduplicated", []string{j("b.parquet"), "-", j("*.parquet"), j("sub")},
			[]string{j("b.parquet"), "-", j("a.parquet"), j("sub/d.parquet"), j("sub/e.parquet")}},
		{"glob skips directories", []string{j("x.*")}, nil},
		{"glob over directories", []string{j("s*/*.parquet")}, []string{j("sub/d.parquet"), j("sub/e.parquet")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandInputs(tc.args, ".parquet")
			if tc.want == nil {
				if err == nil || ExitCode(err) != ExitUsage {
					t.Fatalf("got %q, %v; want a usage error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	// The directory extension is a parameter: from-jsonl reads *.jsonl.
	got, err := ExpandInputs([]string{dir}, ".jsonl")
	if err != nil || !slices.Equal(got, []string{j("c.jsonl")}) {
		t.Fatalf("jsonl dir: got %q, %v", got, err)
	}
}

func TestExpandInputsErrors(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "a.parquet")
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		mention string
	}{
		{"no args", nil, "no input"},
		{"glob matches nothing", []string{filepath.Join(dir, "*.nope")}, "matches no files"},
		{"missing file", []string{filepath.Join(dir, "missing.parquet")}, "no such file"},
		{"empty directory", []string{filepath.Join(dir, "empty")}, "has no *.parquet files"},
		{"stdin twice", []string{"-", "-"}, "more than once"},
		{"bad pattern", []string{filepath.Join(dir, "[")}, "bad glob"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ExpandInputs(tc.args, ".parquet")
			if err == nil {
				t.Fatal("no error")
			}
			if ExitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitUsage)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
			for _, a := range tc.args {
				if a != "-" && !strings.Contains(err.Error(), a) {
					t.Errorf("error %q does not name the argument %q", err, a)
				}
			}
		})
	}
}

func TestOpenInputSpoolsStdin(t *testing.T) {
	tmp := t.TempDir()
	data := strings.Repeat("parquet bytes ", 10000)
	in, err := OpenInput(context.Background(), "-", strings.NewReader(data), tmp)
	if err != nil {
		t.Fatal(err)
	}
	if in.Size != int64(len(data)) {
		t.Errorf("size %d, want %d", in.Size, len(data))
	}
	// Random access works, as a Parquet reader needs it for the footer.
	tail := make([]byte, 6)
	if _, err := in.ReadAt(tail, in.Size-6); err != nil || string(tail) != "bytes " {
		t.Fatalf("ReadAt tail = %q, %v", tail, err)
	}
	got, err := io.ReadAll(in)
	if err != nil || string(got) != data {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("spooled copy not removed: %v", ents)
	}
}

func TestOpenInputCancelledSpoolLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := OpenInput(ctx, "-", strings.NewReader("x"), tmp); err == nil || ExitCode(err) != ExitInterrupted {
		t.Fatalf("err = %v, want cancellation", err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("temporary file left: %v", ents)
	}
}

func TestOpenInputFile(t *testing.T) {
	p := touch(t, t.TempDir(), "a.parquet")[0]
	in, err := OpenInput(context.Background(), p, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Size != int64(len("a.parquet")) || in.Name != p {
		t.Fatalf("got name %q size %d", in.Name, in.Size)
	}
	if _, err := OpenInput(context.Background(), p+".missing", nil, ""); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), p+".missing") {
		t.Fatalf("missing file: %v", err)
	}
}
