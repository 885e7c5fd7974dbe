package trainer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestLockedRunFailsBeforeLoadingTheModel: while another process holds a
// run's lock, LoadBase fails at once with ErrLocked, before it reads the
// model folder (here a missing one, whose error it gave first: an
// overlapping cron call loaded the whole base model, on the training
// run's GPU with --device cuda, only to find the lock held). With the lock
// free it reports the model folder and leaves no run folder behind.
func TestLockedRunFailsBeforeLoadingTheModel(t *testing.T) {
	dir := t.TempDir()
	o := defaultOptions()
	o.Model, o.Out, o.Name = filepath.Join(dir, "no-model"), dir, "busy"
	unlock, err := (&checkpoint.Run{Dir: o.RunDir()}).Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBase(nil, &o); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("lock held: %v, want ErrLocked", err)
	}
	unlock()
	if _, err := LoadBase(nil, &o); !errors.Is(err, stageerr.ErrBadInput) {
		t.Errorf("lock free: %v, want the model folder's bad input", err)
	}
	o.Name = "fresh"
	if _, err := LoadBase(nil, &o); !errors.Is(err, stageerr.ErrBadInput) {
		t.Errorf("fresh run: %v, want the model folder's bad input", err)
	}
	if _, err := os.Stat(o.RunDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed LoadBase of a fresh run left %s: %v", o.RunDir(), err)
	}
}
