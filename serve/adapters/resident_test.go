package adapters

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// With Options.Backend, a loaded adapter is placed on it: its tensors are
// the backend's memory (a device backend's ops can read them), with the
// values read from the folder.
func TestPollPlacesOnBackend(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	be := kerneltest.Resident(ref.New())
	r := New(Options{Dir: root, Config: c, Backend: be})
	want := write(t, c, filepath.Join(root, "exp", "step-000002"), 2)
	if n := r.Poll(context.Background()); n != 1 {
		t.Fatalf("loaded %d, want 1", n)
	}
	a, err := r.Resolve("exp")
	if err != nil {
		t.Fatal(err)
	}
	if a.Weights.Backend() != be {
		t.Fatalf("adapter placed on %v, want the registry's backend", a.Weights.Backend())
	}
	q, wq := a.Weights.Layers[1][0], want.Layers[1][0]
	if !slices.Equal(q.A, wq.A) {
		t.Error("placed lora_A differs from the folder's")
	}
	// Each tensor is inside the backend's allocations: an op reading it
	// does not panic. A served adapter holds no gradients (half the
	// memory): only A and B are allocated.
	be.Copy(q.A, q.A, len(q.A))
	if q.DA != nil || q.DB != nil {
		t.Error("a served adapter holds gradients")
	}
	if n := be.Live(); n != 1 {
		t.Errorf("%d allocations for one served adapter, want 1 (A and B; no gradients)", n)
	}
	if be.Live() == 0 {
		t.Fatal("nothing allocated on the backend")
	}
	r.Close()
	if be.Live() == 0 {
		t.Fatal("the registry's Close freed an adapter a Ref still holds")
	}
	a.Release()
	if n := be.Live(); n != 0 {
		t.Errorf("%d allocations live after the registry's Close and the last Release", n)
	}
	if _, err := r.Resolve("exp"); err == nil {
		t.Error("a closed registry still resolves its adapters")
	}
	if n := r.Poll(context.Background()); n != 0 {
		t.Errorf("a closed registry loaded %d adapters", n)
	}
}

// oomOnce is kerneltest.Resident whose AllocF32 fails while full is set: a
// device whose memory is taken for now (requests in flight still hold the
// steps the registry dropped).
type oomOnce struct {
	*kerneltest.ResidentBackend
	full atomic.Bool
}

func (b *oomOnce) AllocF32(n int) ([]float32, error) {
	if b.full.Load() {
		return nil, errors.New("out of memory")
	}
	return b.ResidentBackend.AllocF32(n)
}

// TestPlaceFailureRetried: a step that cannot be placed on the backend
// because its memory is full for now is not refused for good: the folder
// is fine, so a later poll loads it once memory is free, without the folder
// having to change; meanwhile the previous step keeps serving and the
// failure is logged once, naming the step and the backend's error. It was
// marked failed like a broken folder, so "<run>" stayed on the old step
// until the step folder was rewritten, which for a finished training step
// never happens.
func TestPlaceFailureRetried(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	be := &oomOnce{ResidentBackend: kerneltest.Resident(ref.New())}
	logs := &records{}
	r := New(Options{Dir: root, Config: c, Backend: be, Log: slog.New(logs)})
	defer r.Close()
	run := filepath.Join(root, "exp")
	write(t, c, filepath.Join(run, "step-000001"), 1)
	if n := r.Poll(context.Background()); n != 1 {
		t.Fatalf("step 1: loaded %d, want 1", n)
	}
	write(t, c, filepath.Join(run, "step-000002"), 2)
	be.full.Store(true)
	if got := polls(r, 3); !slices.Equal(got, []int{0, 0, 0}) {
		t.Fatalf("with the backend full: loads %v, want none", got)
	}
	a, err := r.Resolve("exp")
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != 1 {
		t.Fatalf("with the backend full, exp is step %d, want the previous step 1", a.Step)
	}
	a.Release()
	logged := 0
	for _, msg := range []string{msgRefused, msgPlaceWarn} {
		logged += logs.count(slog.LevelError, msg, "err", "out of memory") + logs.count(slog.LevelWarn, msg, "err", "out of memory")
	}
	if logged != 1 {
		t.Fatalf("the backend being full over 3 polls was logged %d times, want 1:\n%s", logged, logs)
	}
	be.full.Store(false)
	if got := polls(r, 2); !slices.Equal(got, []int{1, 0}) {
		t.Fatalf("once the backend has room: loads %v, want [1 0]", got)
	}
	a, err = r.Resolve("exp")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if a.Step != 2 {
		t.Fatalf("once the backend has room, exp is step %d, want 2", a.Step)
	}
}
