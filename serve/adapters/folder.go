package adapters

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside means a run folder, step folder or adapter file resolves, through a
// symbolic link, to a place outside the adapters folder. Only what lies inside
// the folder the operator named is ever served.
var ErrOutside = errors.New("outside the adapters folder")

// Step is the step folder a run's "<run>" means right now.
type Step struct {
	N    int    // the step number
	Dir  string // DIR/<run>/step-N as named (for logs, and for vLLM's lora_path)
	Real string // the same folder with symbolic links resolved; it lies inside DIR
}

// Locate finds the current step of run in the adapters folder dir: the step
// folder DIR/<run>/latest names, or without that file the highest step-N
// folder. The run folder, the step folder and every entry of the step folder
// must resolve inside dir (ErrOutside otherwise). It fails with an error
// wrapping os.ErrNotExist when the run has no step yet.
func Locate(dir, run string) (Step, error) {
	if !ValidRun(run) {
		return Step{}, fmt.Errorf("adapters: %q is not a run name", run)
	}
	root, err := realPath(dir)
	if err != nil {
		return Step{}, fmt.Errorf("adapters: folder %s: %w", dir, err)
	}
	runDir := filepath.Join(dir, run)
	realRun, err := inside(root, runDir)
	if err != nil {
		return Step{}, err
	}
	name, n, err := currentStep(realRun)
	if err != nil {
		return Step{}, fmt.Errorf("adapters: run %s: %w", run, err)
	}
	stepDir := filepath.Join(runDir, name)
	real, err := inside(root, stepDir)
	if errors.Is(err, os.ErrNotExist) {
		// Only latest can name a folder that is not there; that is an
		// operator's mistake to report, not a run without steps.
		return Step{}, fmt.Errorf("adapters: run %s: %s names %s, which does not exist; point it at a step folder of the run",
			run, filepath.Join(runDir, "latest"), name)
	}
	if err != nil {
		return Step{}, err
	}
	if err := entriesInside(root, stepDir, real); err != nil {
		return Step{}, err
	}
	return Step{N: n, Dir: stepDir, Real: real}, nil
}

// currentStep returns the name and number of the step folder the run folder
// runDir points at: the one its latest file names (which must be a plain
// step-N name, never a path), else the highest step-N folder.
func currentStep(runDir string) (string, int, error) {
	latest := filepath.Join(runDir, "latest")
	b, err := os.ReadFile(latest)
	if err == nil {
		name := strings.TrimSpace(string(b))
		n, ok := ParseStepDir(name)
		if !ok {
			return "", 0, fmt.Errorf("%s names %q, not a step-N folder of the run; write the name of a step folder (step-000042) into it", latest, name)
		}
		return name, n, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", 0, err
	}
	return highestStep(runDir)
}

// highestStep returns the step-N folder of runDir with the largest N.
func highestStep(runDir string) (string, int, error) {
	ents, err := os.ReadDir(runDir)
	if err != nil {
		return "", 0, err
	}
	best, bestN := "", -1
	for _, ent := range ents {
		if n, ok := ParseStepDir(ent.Name()); ok && n > bestN && IsDir(runDir, ent) {
			best, bestN = ent.Name(), n
		}
	}
	if best == "" {
		return "", 0, fmt.Errorf("no step folder in %s: %w", runDir, os.ErrNotExist)
	}
	return best, bestN, nil
}

// IsDir reports whether the entry ent of folder parent is a folder, following
// a symbolic link (where it leads is checked when the folder is used).
func IsDir(parent string, ent os.DirEntry) bool {
	if ent.Type()&os.ModeSymlink == 0 {
		return ent.IsDir()
	}
	st, err := os.Stat(filepath.Join(parent, ent.Name()))
	return err == nil && st.IsDir()
}

// realPath is p made absolute with every symbolic link resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// inside resolves p and returns its real path when that lies inside root (a
// real path itself); a p that leads elsewhere fails with ErrOutside.
func inside(root, p string) (string, error) {
	real, err := realPath(p)
	if err != nil {
		return "", fmt.Errorf("adapters: %w", err)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("adapters: %s resolves to %s, %w %s; copy the adapter into the folder instead of linking to it",
			p, real, ErrOutside, root)
	}
	return real, nil
}

// entriesInside checks that every entry of the step folder (its real path
// real, named dir) resolves inside root, so that no adapter file is read
// through a link to elsewhere.
func entriesInside(root, dir, real string) error {
	ents, err := os.ReadDir(real)
	if err != nil {
		return fmt.Errorf("adapters: %w", err)
	}
	for _, ent := range ents {
		if ent.Type()&os.ModeSymlink == 0 {
			continue // a plain entry of a folder inside root is inside root
		}
		if _, err := inside(root, filepath.Join(dir, ent.Name())); err != nil {
			return err
		}
	}
	return nil
}
