package adapters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// perAdapter is the number of backend allocations of one loaded adapter:
// its A and B in one (Adapter.Flat); a served adapter has no gradients
// (DropGrads).
const perAdapter = 1

// loadStep writes step n of run exp, points latest at it and polls once.
func loadStep(t *testing.T, r *Registry, c *model.Config, root string, n int) {
	t.Helper()
	run := filepath.Join(root, "exp")
	name := fmt.Sprintf("step-%06d", n)
	if _, err := os.Stat(filepath.Join(run, name)); err != nil {
		write(t, c, filepath.Join(run, name), uint64(n))
	}
	setLatest(t, run, name)
	if got := r.Poll(context.Background()); got != 1 {
		t.Fatalf("step %d: loaded %d adapters, want 1", n, got)
	}
}

// TestDroppedStepFreedWhenUnheld: a step dropped beyond MaxKeep while a Ref
// holds it stays allocated (an op on its tensors still works) until the
// Ref is released; one nobody holds is freed as it is dropped; a second
// Release does nothing; a rewritten step replaces the loaded one the same
// way; Close frees what nobody holds at once and the rest at its release.
func TestDroppedStepFreedWhenUnheld(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	be := kerneltest.Resident(ref.New())
	r := New(Options{Dir: root, Config: c, MaxKeep: 1, Backend: be})
	live := func(want int, when string) {
		t.Helper()
		if n := be.Live(); n != want*perAdapter {
			t.Fatalf("%s: %d allocations live, want %d adapters' (%d)", when, n, want, want*perAdapter)
		}
	}
	loadStep(t, r, c, root, 1)
	live(1, "step 1 loaded")
	one, err := r.Resolve("exp")
	if err != nil {
		t.Fatal(err)
	}
	loadStep(t, r, c, root, 2) // drops step 1, which one holds
	if _, err := r.Resolve("exp@1"); err == nil {
		t.Fatal("step 1 still resolves after it was dropped")
	}
	live(2, "step 1 dropped while held")
	q := one.Weights.Layers[1][model.ModQ]
	be.Copy(q.A, q.A, len(q.A)) // panics if step 1 were freed
	one.Release()
	live(1, "step 1 released")
	one.Release() // a second release counts for nothing: step 2 stays
	two, err := r.Resolve("exp")
	if err != nil || two.Step != 2 {
		t.Fatalf("exp = %+v, %v; want step 2", two, err)
	}
	two.Release()
	two.Release()
	live(1, "step 2 resolved and released twice")
	q = two.Weights.Layers[0][model.ModV]
	be.Copy(q.A, q.A, len(q.A)) // step 2 is still the registry's

	// Nobody holds step 2: loading step 3 frees it at once.
	loadStep(t, r, c, root, 3)
	live(1, "unheld step 2 dropped")

	// Step 3 is rewritten while held: the new load replaces it, the old
	// stays until its release.
	three, err := r.Resolve("exp@3")
	if err != nil {
		t.Fatal(err)
	}
	dir3 := filepath.Join(root, "exp", "step-000003")
	os.RemoveAll(dir3)
	write(t, c, dir3, 33)
	if got := r.Poll(context.Background()); got != 1 {
		t.Fatalf("rewritten step 3: loaded %d, want 1", got)
	}
	live(2, "step 3 reloaded while its first load is held")
	again, err := r.Resolve("exp")
	if err != nil || again.Adapter == three.Adapter {
		t.Fatalf("exp = %+v, %v; want the new load of step 3", again, err)
	}
	three.Release()
	live(1, "first load of step 3 released")

	// Close: again holds the current step; nothing else is held.
	r.Close()
	live(1, "closed while a step is held")
	q = again.Weights.Layers[1][model.ModV]
	be.Copy(q.A, q.A, len(q.A))
	again.Release()
	live(0, "last hold released after Close")
	again.Release()
	var none *Ref
	none.Release() // the base model's nil Ref
}

// TestRefsConcurrent: requests resolve, use and release adapters while
// polls load new steps and drop old ones, under -race; no op ever sees a
// freed adapter (Resident panics), and once the registry is closed and
// every Ref released, nothing is left on the backend.
func TestRefsConcurrent(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	be := kerneltest.Resident(ref.New())
	r := New(Options{Dir: root, Config: c, MaxKeep: 2, Backend: be})
	loadStep(t, r, c, root, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []*Ref // a few Refs kept past the end, released after Close
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a, err := r.Resolve("exp")
				if err != nil {
					t.Error(err)
					return
				}
				for _, layer := range a.Weights.Layers {
					for _, l := range layer {
						if l != nil {
							be.SumSquares(l.B, len(l.B)) // panics if freed
						}
					}
				}
				if i == w {
					mu.Lock()
					held = append(held, a)
					mu.Unlock()
					continue
				}
				a.Release()
			}
		}()
	}
	for n := 2; n <= 12; n++ {
		loadStep(t, r, c, root, n)
	}
	close(stop)
	wg.Wait()
	r.Close()
	for _, a := range held {
		a.Release()
	}
	if n := be.Live(); n != 0 {
		t.Fatalf("%d allocations live after Close and every release", n)
	}
}
