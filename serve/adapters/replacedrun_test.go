package adapters

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/train/model"
)

// TestReplacedRunStepsNotServed: a run folder deleted and made anew (a
// run retrained under its name; hone-serve's copy of a run published
// anew, swapped in whole) holds another run's steps. The steps read from
// the old folder stayed loaded, and "<run>@<step>" named them: the old
// run's step 2 answered for the new run's step 2, and its step 3, which
// the new run has not reached, was served as the run's. They are dropped;
// the current one once the new folder's step loaded, "<run>" keeping the
// old one until then.
func TestReplacedRunStepsNotServed(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	r := New(Options{Dir: root, Config: c, MaxKeep: 3})
	run := filepath.Join(root, "exp")
	for _, n := range []int{2, 3} {
		write(t, c, filepath.Join(run, fmt.Sprintf("step-%06d", n)), uint64(n))
		setLatest(t, run, fmt.Sprintf("step-%06d", n))
		polls(r, 1)
	}
	if _, err := r.Resolve("exp@2"); err != nil {
		t.Fatalf("exp@2 not loaded: %v", err)
	}
	// The new run, made beside the old and swapped in, is at step 1 and 2.
	fresh := filepath.Join(root, ".exp.tmp-1")
	ads := map[int]*model.Adapter{}
	for _, n := range []int{1, 2} {
		ads[n] = write(t, c, filepath.Join(fresh, fmt.Sprintf("step-%06d", n)), uint64(20+n))
	}
	setLatest(t, fresh, "step-000001")
	if err := os.Rename(run, fresh+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fresh, run); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(fresh + ".old"); err != nil {
		t.Fatal(err)
	}
	polls(r, 2)
	a, err := r.Resolve("exp")
	if err != nil || a.Step != 1 || a.Weights.Layers[0][model.ModQ].A[0] != ads[1].Layers[0][model.ModQ].A[0] {
		t.Fatalf(`Resolve("exp") = %+v, %v; want the new run's step 1`, a, err)
	}
	a.Release()
	if a, err := r.Resolve("exp@3"); !errors.Is(err, ErrUnknown) {
		t.Errorf("the deleted run's step 3 is still served: %+v, %v", a, err)
	}
	if a, err := r.Resolve("exp@2"); err == nil && a.Weights.Layers[0][model.ModQ].A[0] != ads[2].Layers[0][model.ModQ].A[0] {
		t.Errorf("exp@2 serves the deleted run's step 2, not the new run's")
	}
}

// TestRunDeletedAndMadeAgainNotServed: a run deleted (rm -rf) and trained
// again under its name has a run folder made after the old one went, and
// ext4 gives it the old folder's inode: os.SameFile took it for the old
// folder, so the old run's step 3, which the new run has not reached,
// stayed served as "exp@3". The folder's birth time tells them apart
// (runfolder.FolderID).
func TestRunDeletedAndMadeAgainNotServed(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	r := New(Options{Dir: root, Config: c, MaxKeep: 3})
	run := filepath.Join(root, "exp")
	for _, n := range []int{2, 3} {
		write(t, c, filepath.Join(run, fmt.Sprintf("step-%06d", n)), uint64(n))
		setLatest(t, run, fmt.Sprintf("step-%06d", n))
		polls(r, 1)
	}
	if err := os.RemoveAll(run); err != nil {
		t.Fatal(err)
	}
	ad := write(t, c, filepath.Join(run, "step-000001"), 21)
	setLatest(t, run, "step-000001")
	polls(r, 2)
	a, err := r.Resolve("exp")
	if err != nil || a.Step != 1 || a.Weights.Layers[0][model.ModQ].A[0] != ad.Layers[0][model.ModQ].A[0] {
		t.Fatalf(`Resolve("exp") = %+v, %v; want the new run's step 1`, a, err)
	}
	a.Release()
	for _, name := range []string{"exp@2", "exp@3"} {
		if a, err := r.Resolve(name); !errors.Is(err, ErrUnknown) {
			t.Errorf("the deleted run's %s is still served: %+v, %v", name, a, err)
		}
	}
}
