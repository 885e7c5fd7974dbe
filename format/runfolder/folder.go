package runfolder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
)

// Step is one step folder of a run: its number and its folder name as
// found ("step-000042"; a folder made by hand may be "step-42").
type Step struct {
	N    int
	Name string
}

// ReadPointer reads the pointer file name (LatestName, or another file of
// the same form) of the run folder runDir: the name of a step folder of the
// run, with white space around it ignored. ok is false when the file does
// not exist. A file that holds anything but a step folder's name (a path, a
// number) is an error naming the file; whether that folder exists is the
// caller's to check.
func ReadPointer(runDir, name string) (s Step, ok bool, err error) {
	path := filepath.Join(runDir, name)
	// Stat first: opening a named pipe with no writer to read it blocks,
	// and a device (a link to /dev/zero) never ends, so that a caller
	// polling the run (hone-serve's Sync, the embedded server's watch)
	// would stop for good.
	err = fileset.CheckRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return Step{}, false, nil
	}
	if errors.Is(err, fileset.ErrNotRegular) {
		return Step{}, false, fmt.Errorf("%w; it must hold the name of a step folder (%s)", err, StepName(42))
	}
	if err != nil {
		return Step{}, false, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Step{}, false, nil
	}
	if err != nil {
		return Step{}, false, err
	}
	s.Name = strings.TrimSpace(string(b))
	n, ok := ParseStepName(s.Name)
	if !ok {
		return Step{}, false, fmt.Errorf("%s names %q, not a step-N folder of the run; write the name of a step folder (%s) into it",
			path, s.Name, StepName(42))
	}
	s.N = n
	return s, true, nil
}

// WritePointer points the pointer file name of runDir at step n, atomically:
// a reader sees the old step or the new one. Call it only after step n's
// folder is complete.
func WritePointer(runDir, name string, n int) error {
	return WriteFile(filepath.Join(runDir, name), []byte(StepName(n)+"\n"))
}

// Steps lists the step folders of runDir, by number (two names of one
// number, "step-42" beside "step-000042", by name). A symbolic link to a
// folder counts as a folder; where it leads is Locate's to check. The
// error of a missing runDir wraps os.ErrNotExist.
func Steps(runDir string) ([]Step, error) {
	ents, err := os.ReadDir(runDir)
	if err != nil {
		return nil, err
	}
	var out []Step
	for _, ent := range ents {
		if n, ok := ParseStepName(ent.Name()); ok && isDir(runDir, ent) {
			out = append(out, Step{N: n, Name: ent.Name()})
		}
	}
	slices.SortFunc(out, func(a, b Step) int { return cmp.Or(cmp.Compare(a.N, b.N), strings.Compare(a.Name, b.Name)) })
	return out, nil
}

// Newest returns the step folder of runDir with the highest number (of two
// names of one number, the first by name). It fails with an error wrapping
// os.ErrNotExist when runDir has no step folder or does not exist.
func Newest(runDir string) (Step, error) {
	steps, err := Steps(runDir)
	if err != nil {
		return Step{}, err
	}
	if len(steps) == 0 {
		return Step{}, fmt.Errorf("no step folder in %s: %w", runDir, os.ErrNotExist)
	}
	last := steps[len(steps)-1]
	for _, s := range steps {
		if s.N == last.N {
			return s, nil
		}
	}
	return last, nil
}

// Runs lists the run folders of the adapters folder root by name: the
// entries that are folders (or links to folders) with a valid run name.
func Runs(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ent := range ents {
		if ValidRun(ent.Name()) && isDir(root, ent) {
			out = append(out, ent.Name())
		}
	}
	return out, nil
}

// isDir reports whether the entry ent of folder parent is a folder, following
// a symbolic link.
func isDir(parent string, ent os.DirEntry) bool {
	if ent.Type()&os.ModeSymlink == 0 {
		return ent.IsDir()
	}
	st, err := os.Stat(filepath.Join(parent, ent.Name()))
	return err == nil && st.IsDir()
}

// tempMark is in the name of every temporary file or folder of a run
// folder: ".NAME.tmp-…", hidden from readers by its leading dot.
const tempMark = ".tmp-"

// IsTemp reports whether name, an entry of a run folder, is what an
// interrupted atomic write leaves behind (WriteFile's files, and the step
// folders format/peft.WriteWith builds under the same kind of name).
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMark)
}

// WriteFile replaces the file at path, in a run folder, atomically, through
// fileset.Create: data goes to a temporary file beside it (".NAME.tmp-…",
// which IsTemp recognises), is synced and renamed over path, and the folder
// is synced, so that a reader or a crash sees the old file or the new one,
// never part of one. The folder is made if need be.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("runfolder: %w", err)
	}
	out, err := fileset.Create(context.Background(), path)
	if err != nil {
		return fmt.Errorf("runfolder: %w", err)
	}
	defer out.Abort()
	if _, err := out.Write(data); err != nil {
		return fmt.Errorf("runfolder: write %s: %w", path, err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("runfolder: %w", err)
	}
	return nil
}

// swapByRenames exchanges the folders a and b by renaming b aside, a to b
// and the one aside to a: between the first two renames b is missing (a
// reader takes the run as gone for that moment), never half of either.
func swapByRenames(a, b string) error {
	aside := a + ".old"
	if err := os.Rename(b, aside); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		return errors.Join(err, os.Rename(aside, b))
	}
	return os.Rename(aside, a)
}
