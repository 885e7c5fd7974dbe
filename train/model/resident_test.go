package model

import (
	"context"
	"testing"

	"github.com/hone-rl/hone/kernels/kerneltest"
)

// Everything the model allocates through a backend that owns its memory
// goes back to it: weights (float32, then bfloat16 after ToBF16), passes'
// activation slabs (Step's device logits among them), the KV cache, the
// adapter and what Merge uses on the way; Step hands the host its logits
// in Go memory (the checking backend is a kernels.HostCopier). After Close, Free and the cache's Close the
// checking backend holds nothing.
func TestResidentFreesEverything(t *testing.T) {
	ctx := context.Background()
	for _, fam := range families {
		t.Run(fam, func(t *testing.T) {
			be := kerneltest.Resident(kernelBackends(t)[1])
			m := newMicro(t, fam, be, 3)
			ad := randomAdapter(t, m, AllModules(), 2, 4)
			b := packed(m.Config.Vocab, []int{5, 3}, 8)
			for _, ckpt := range []bool{false, true} {
				ad.ZeroGrad()
				p, err := m.Forward(ctx, b, ad, TrainOptions{Checkpoint: ckpt})
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Backward(ctx, make([]float32, len(b.IDs)), nil); err != nil {
					t.Fatal(err)
				}
				p.Release()
			}
			if err := m.ToBF16(); err != nil {
				t.Fatal(err)
			}
			cache := NewContiguousCache(&m.Config, be)
			var logits []float32
			for _, ids := range [][]int32{{1, 2, 3}, {4}, {5}} {
				var err error
				if logits, err = m.StepInto(ctx, cache, []StepInput{{Seq: 1, IDs: ids}, {Seq: 2, IDs: ids[:1]}}, ad, logits); err != nil {
					t.Fatal(err)
				}
				if be.Overlaps(logits) {
					t.Fatal("Step's logits are the backend's memory: on a device the host would read them in place")
				}
			}
			m.FreeLogits(logits)
			if err := m.Merge(ad); err != nil {
				t.Fatal(err)
			}
			cache.Truncate(2, 0)
			if err := cache.Close(); err != nil {
				t.Fatal(err)
			}
			ad.Free()
			if be.Live() == 0 {
				t.Fatal("nothing live before Close: the model allocated nowhere")
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if n := be.Live(); n != 0 {
				t.Errorf("%d allocations (%d bytes) live after Close, Free and the cache's Close, want 0", n, be.LiveBytes())
			}
		})
	}
}

// TestDropGrads: an adapter that is only run forward (served) gives up its
// gradients: placed after DropGrads it takes half the backend memory and
// its logits are the same as with them; dropped after Place, their memory
// goes back. Before, every served step held gradients it never used.
func TestDropGrads(t *testing.T) {
	ctx := context.Background()
	be := kerneltest.Resident(kernelBackends(t)[1])
	m := newMicro(t, "qwen3", be, 3)
	defer m.Close()
	b := packed(m.Config.Vocab, []int{5, 3}, 8)
	live := func(ad *Adapter) (int64, []float32) {
		before := be.LiveBytes()
		if err := ad.Place(be); err != nil {
			t.Fatal(err)
		}
		n := be.LiveBytes() - before
		logits, err := m.Logits(ctx, b, ad)
		if err != nil {
			t.Fatal(err)
		}
		return n, logits
	}
	full := randomAdapter(t, m, AllModules(), 2, 4)
	withGrads, want := live(full)
	served := randomAdapter(t, m, AllModules(), 2, 4)
	served.DropGrads()
	without, got := live(served)
	if without*2 != withGrads {
		t.Errorf("placed adapter takes %d bytes without gradients, %d with; want half", without, withGrads)
	}
	if maxRelDiff(got, want) != 0 {
		t.Errorf("logits differ without gradients: %g", maxRelDiff(got, want))
	}
	full.DropGrads() // placed already: its gradients' memory goes back too
	if _, g := full.Flat(); g != nil {
		t.Error("Flat still has gradients after DropGrads")
	}
	full.Free()
	served.Free()
}
