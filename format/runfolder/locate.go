package runfolder

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

// Current is the step folder a run's "<run>" means right now.
type Current struct {
	N    int    // the step number
	Dir  string // ROOT/<run>/step-N as named (for logs, and for vLLM's lora_path)
	Real string // the same folder with symbolic links resolved; it lies inside ROOT
}

// Locate finds the current step of run in the adapters folder root: the step
// folder ROOT/<run>/latest names, or without that file the highest step
// folder. The run folder, the step folder and every entry of the step folder
// must resolve inside root (ErrOutside otherwise). It fails with an error
// wrapping os.ErrNotExist when the run has no step yet; what to do then, or
// on any other error, is the caller's policy.
func Locate(root, run string) (Current, error) {
	if err := CheckRun(run); err != nil {
		return Current{}, fmt.Errorf("runfolder: %w", err)
	}
	realRoot, err := realPath(root)
	if err != nil {
		return Current{}, fmt.Errorf("runfolder: folder %s: %w", root, err)
	}
	runDir := filepath.Join(root, run)
	realRun, err := inside(realRoot, runDir)
	if err != nil {
		return Current{}, err
	}
	step, err := currentStep(realRun)
	if err != nil {
		return Current{}, fmt.Errorf("runfolder: run %s: %w", run, err)
	}
	stepDir := filepath.Join(runDir, step.Name)
	real, err := inside(realRoot, stepDir)
	if errors.Is(err, os.ErrNotExist) {
		// Only latest can name a folder that is not there; that is an
		// operator's mistake to report, not a run without steps.
		return Current{}, fmt.Errorf("runfolder: run %s: %s names %s, which does not exist; point it at a step folder of the run",
			run, filepath.Join(runDir, LatestName), step.Name)
	}
	if err != nil {
		return Current{}, err
	}
	if err := entriesInside(realRoot, stepDir, real); err != nil {
		return Current{}, err
	}
	return Current{N: step.N, Dir: stepDir, Real: real}, nil
}

// currentStep returns the step folder the run folder runDir points at: the
// one its latest file names (a plain step folder name, never a path), else
// the highest step folder.
func currentStep(runDir string) (Step, error) {
	s, ok, err := ReadPointer(runDir, LatestName)
	if err != nil || ok {
		return s, err
	}
	return Newest(runDir)
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
		return "", fmt.Errorf("runfolder: %w", err)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("runfolder: %s resolves to %s, %w %s; copy the adapter into the folder instead of linking to it",
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
		return fmt.Errorf("runfolder: %w", err)
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
