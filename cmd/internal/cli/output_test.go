package cli

import (
	"bytes"
	"context"
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

// The atomic writer itself is format/fileset's (its tests cover commit,
// abort and modes); here: a path that cannot be an output is a usage error.
func TestOpenOutputErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, mention string }{
		{dir, "is a directory"},
		{filepath.Join(file, "out.parquet"), "a file is in the way"},
		{"nosuch://bucket/out.parquet", "no support for nosuch://"}, // a scheme no driver registered (this test links s3://)
	} {
		if _, err := OpenOutput(context.Background(), tc.path, nil, true); ExitCode(err) != ExitUsage || !isUsageOnly(err) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("OpenOutput(%q): %v (exit code %d)", tc.path, err, ExitCode(err))
		}
	}
}

func TestWriteOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteOutput(context.Background(), path, nil, true, func(w io.Writer) error {
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
	if err := WriteOutput(context.Background(), path, nil, true, func(w io.Writer) error {
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
		if err := WriteOutput(context.Background(), o, &stdout, true, func(w io.Writer) error {
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
	if _, err := OpenOutput(context.Background(), "", pty, true); ExitCode(err) != ExitUsage {
		t.Fatalf("Parquet to a terminal: err %v, want a usage error", err)
	}
	out, err := OpenOutput(context.Background(), "-", pty, false)
	if err != nil {
		t.Fatalf("text to a terminal refused: %v", err)
	}
	out.Close()
}

// -o into a folder that does not exist yet makes it; a failed run leaves
// no folder behind.
func TestWriteOutputMakesFolders(t *testing.T) {
	dir := t.TempDir()
	err := WriteOutput(context.Background(), filepath.Join(dir, "runs", "r1", "failed.parquet"), nil, true, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("no error")
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("failed write left %q", names)
	}
	path := filepath.Join(dir, "runs", "r1", "out.parquet")
	if err := WriteOutput(context.Background(), path, nil, true, func(w io.Writer) error {
		_, err := w.Write([]byte("whole"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "whole" {
		t.Fatalf("read back %q, %v", got, err)
	}
}
