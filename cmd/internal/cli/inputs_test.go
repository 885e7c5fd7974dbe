package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// The rule itself is format/fileset's (its tests cover it); here: each kind
// of failure maps to its exit code, and the message names the argument.
func TestResolveInputsExitCodes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	tests := []struct {
		name  string
		args  []string
		usage bool // usage error (points to --help) rather than bad input
	}{
		{"no args", nil, true},
		{"missing file", []string{filepath.Join(dir, "missing.parquet")}, true},
		{"glob matches nothing", []string{filepath.Join(dir, "*.nope")}, true},
		{"stdin twice", []string{"-", "-"}, true},
		{"unknown scheme", []string{"gs://bucket/a.parquet"}, true},
		{"unreadable folder", []string{locked}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "unreadable folder" && os.Geteuid() == 0 {
				t.Skip("root reads any folder")
			}
			in, err := ResolveInputs(context.Background(), tc.args, fileset.Options{Stdin: strings.NewReader("")})
			if err == nil {
				in.Close()
				t.Fatal("no error")
			}
			if ExitCode(err) != ExitUsage || isUsageOnly(err) != tc.usage {
				t.Errorf("%v: exit code %d, usage %v; want 2, usage %v", err, ExitCode(err), isUsageOnly(err), tc.usage)
			}
			for _, a := range tc.args {
				if a != "-" && !strings.Contains(err.Error(), a) {
					t.Errorf("error %q does not name the argument %q", err, a)
				}
			}
		})
	}
	in, err := ResolveInputs(context.Background(), []string{dir + "/*.parquet"}, fileset.Options{})
	if err != nil || in.Len() != 1 {
		t.Fatalf("glob: %v, %v", in.Names(), err)
	}
}
