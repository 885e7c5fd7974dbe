package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// -o naming a symlink to a regular file writes the file the link leads
// to, under a temporary name beside it, and keeps the link: the temporary
// file was renamed over the link, which became a regular file and left
// its target as it was.
func TestOutputThroughSymlink(t *testing.T) {
	dir, _, _ := fixtures(t)
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(work, "data", "out.jsonl")
	if err := os.WriteFile(target, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(work, "out.jsonl")
	if err := os.Symlink("data/out.jsonl", link); err != nil {
		t.Fatal(err)
	}
	mustRun(t, nil, "to-jsonl", "-o", link, dir)
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("after -o %s: %v, mode %v; want the symlink kept", link, err, st.Mode())
	}
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(got), "\n"); n != 5 || strings.Contains(string(got), "old") {
		t.Errorf("the link's target holds %d lines:\n%s", n, got)
	}
	if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode: %v, %v; want 0600 kept", st.Mode(), err)
	}
}

// -o /dev/stdout (or /dev/fd/1) with stdout a regular file, as `> out`
// and `>> out` make it, writes into stdout as a redirect does: the
// temporary file was renamed over /dev/stdout itself (as root, the
// system's /dev/stdout became a regular file, and out stayed empty), or
// could not be made in /dev/fd at all. Appending keeps what out held.
func TestOutputIntoStdoutFile(t *testing.T) {
	dir, _, _ := fixtures(t)
	work := t.TempDir()
	// A link of the test's own to /proc/self/fd/1 stands in for
	// /dev/stdout, so that the base code's rename replaces only it.
	devStdout := filepath.Join(work, "stdout")
	if err := os.Symlink("/proc/self/fd/1", devStdout); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/self/fd/1"); err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, tc := range []struct {
		name, o string
		flag    int
	}{
		{"link to /proc/self/fd/1, >", devStdout, os.O_TRUNC},
		{"/dev/fd/1, >>", "/dev/fd/1", os.O_APPEND},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(work, "out.jsonl")
			if err := os.WriteFile(out, []byte("kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(out, os.O_WRONLY|tc.flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "to-jsonl", "-o", tc.o, dir)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = f, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("-o %s: %v\n%s", tc.o, err, stderr.String())
			}
			if st, err := os.Lstat(devStdout); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%s: %v, mode %v; want the link kept", devStdout, err, st.Mode())
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			want := 5
			if tc.flag == os.O_APPEND {
				want = 6
				if !strings.HasPrefix(string(got), "kept\n") {
					t.Errorf("what stdout held before was lost:\n%s", got)
				}
			}
			if n := strings.Count(string(got), "\n"); n != want || !strings.Contains(string(got), `"trajectory_id"`) {
				t.Errorf("stdout's file holds %d lines, want %d:\n%s", n, want, got)
			}
		})
	}
}

// -o naming a symlink into a folder where no file can be made (sysfs,
// where even root cannot) names the output as given and the folder it
// leads to: the error named the temporary file, ".out.jsonl.tmp-<n>",
// which the user never wrote.
func TestOutputLinkIntoUnwritableFolder(t *testing.T) {
	dir, _, _ := fixtures(t)
	if _, err := os.Stat("/sys/kernel"); err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	link := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.Symlink("/sys/out.jsonl", link); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "to-jsonl", "-o", link, dir)
	if r.code == 0 || !strings.Contains(r.stderr, `"`+link+`"`) || !strings.Contains(r.stderr, "/sys/out.jsonl") || strings.Contains(r.stderr, ".tmp-") {
		t.Errorf("-o %s -> /sys/out.jsonl: exit %d, stderr %q; want it named with its target, not the temporary file", link, r.code, r.stderr)
	}
}
