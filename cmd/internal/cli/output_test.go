package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestAtomicFileCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	a, err := CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(a.TempName()) != dir {
		t.Errorf("temp %q not in the target directory", a.TempName())
	}
	if _, err := a.Write([]byte("new contents")); err != nil {
		t.Fatal(err)
	}
	// Before Commit a reader still sees the old file, whole.
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("before commit: %q", got)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new contents" {
		t.Fatalf("after commit: %q", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the replaced file's 0640", st.Mode().Perm())
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q, want only the output", names)
	}
	if err := a.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Abort after Commit removed the output: %v", err)
	}
	if err := a.Commit(); err == nil {
		t.Error("second Commit succeeded")
	}
}

func TestAtomicFileNewFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.parquet")
	a, err := CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
}

func TestAtomicFileAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("half a fi"))
	if err := a.Abort(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("existing file clobbered: %q", got)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Fatalf("temporary file left: %q", names)
	}
}

func TestCreateAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := CreateAtomic(dir); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory as output: %v", err)
	}
	p := filepath.Join(dir, "no", "such", "out.parquet")
	if _, err := CreateAtomic(p); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: %v", err)
	}
}

func TestWriteOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteOutput(path, nil, true, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("failed write clobbered the file: %q", got)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Fatalf("temporary file left after failure: %q", names)
	}
	if err := WriteOutput(path, nil, true, func(w io.Writer) error {
		_, err := w.Write([]byte("whole"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "whole" {
		t.Fatalf("after success: %q", got)
	}
	// Without -o, output goes to stdout (here a buffer, not a terminal),
	// flushed on commit.
	var stdout bytes.Buffer
	for _, o := range []string{"", "-"} {
		stdout.Reset()
		if err := WriteOutput(o, &stdout, true, func(w io.Writer) error {
			_, err := w.Write([]byte("to stdout"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if stdout.String() != "to stdout" {
			t.Fatalf("-o %q: stdout got %q", o, stdout.String())
		}
	}
}

func TestChooseOutput(t *testing.T) {
	tests := []struct {
		path             string
		terminal, binary bool
		toStdout         bool
		usage            bool
	}{
		{"out.parquet", true, true, false, false},
		{"out.parquet", false, true, false, false},
		{"", false, true, true, false},
		{"-", false, true, true, false},
		{"", true, true, true, true}, // Parquet to a terminal: refused
		{"-", true, true, true, true},
		{"", true, false, true, false}, // text to a terminal: fine
		{"-", true, false, true, false},
	}
	for _, tc := range tests {
		toStdout, err := ChooseOutput(tc.path, tc.terminal, tc.binary)
		if toStdout != tc.toStdout || (err != nil) != tc.usage || (err != nil && ExitCode(err) != ExitUsage) {
			t.Errorf("ChooseOutput(%q, terminal=%v, binary=%v) = %v, %v", tc.path, tc.terminal, tc.binary, toStdout, err)
		}
		if err != nil && !strings.Contains(err.Error(), "-o FILE") {
			t.Errorf("refusal %q does not say what to do", err)
		}
	}
}

// OpenOutput asks the real stdout whether it is a terminal.
func TestOpenOutputRefusesParquetToTerminal(t *testing.T) {
	pty := openPTY(t)
	if _, err := OpenOutput("", pty, true); ExitCode(err) != ExitUsage {
		t.Fatalf("Parquet to a terminal: err %v, want a usage error", err)
	}
	out, err := OpenOutput("-", pty, false)
	if err != nil {
		t.Fatalf("text to a terminal refused: %v", err)
	}
	out.Close()
}
