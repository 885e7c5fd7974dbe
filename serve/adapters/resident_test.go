package adapters

import (
	"context"
	"path/filepath"
	"slices"
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
	// does not panic.
	be.Copy(q.DA, q.A, len(q.A))
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
