package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// newWedged is a wedgedBackend over the reference backend.
func newWedged() *wedgedBackend {
	return &wedgedBackend{hangingBackend: &hangingBackend{Backend: ref.New(), release: make(chan struct{})}, unwedge: make(chan struct{})}
}

// TestGiveUpDuringReap: when Shutdown gives up on the engine while it is
// stuck ending a cancelled request (its Done hook freeing an adapter on a
// wedged device, as hone-serve's does), the reap that comes back later
// ends no more requests: the next cancelled one's rows are not freed and
// its Done hook is not called. Before, reap went on through the batch.
func TestGiveUpDuringReap(t *testing.T) {
	be := newWedged()
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 2, Tokenizer: tok, StopGrace: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inside atomic.Bool
	release := make(chan struct{})
	var done atomic.Int64
	hooks := []func(){
		func() { inside.Store(true); <-release }, // the first ended: stuck
		func() { done.Add(1) },
	}
	var hs []*Handle
	for _, hook := range hooks {
		h, err := e.Submit(&Request{Ctx: ctx, Prompt: []int32{1, 2, 3}, N: 1,
			Params: Params{MaxTokens: 100000, IgnoreEOS: true}, Done: hook})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	for _, h := range hs { // both running
		if _, _, err := h.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	waitfor.Until(t, 10*time.Second, "the first cancelled request's Done hook to be stuck", inside.Load)
	giveUpThenRelease(t, e, be, release, &done)
}

// forkCountingBackend is a copyHangingBackend (its copies of n floats
// hang once armed) that counts the copies of n2 floats made once wedged.
type forkCountingBackend struct {
	*copyHangingBackend
	n2    int
	late2 atomic.Int64
}

func (g *forkCountingBackend) Copy(dst, src []float32, n int) {
	if n == g.n2 && g.wedged.Load() {
		g.late2.Add(1)
	}
	g.copyHangingBackend.Copy(dst, src, n)
}

// TestGiveUpDuringSiblingFork: when Shutdown gives up on a step stuck
// copying a request's prompt rows to its second choice (n = 2), the step
// that comes back copies nothing more: the other request's choices in the
// same step are not forked on a backend that may be wedged, no rows are
// freed and no Done hook is called. Before, fedJobs went on forking.
func TestGiveUpDuringSiblingFork(t *testing.T) {
	cb := &copyHangingBackend{wedgedBackend: newWedged(), release: make(chan struct{})}
	be := &forkCountingBackend{copyHangingBackend: cb}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(cb.unwedge) })
	e := New(m, Config{MaxBatch: 4, Tokenizer: tok, StopGrace: 50 * time.Millisecond})
	kvd := m.Config.KVHeads * m.Config.HeadDim
	cb.n, be.n2 = 5*kvd, 7*kvd
	stopBlocker := block(t, e, 4) // A and B wait, to be admitted together
	var done atomic.Int64
	for _, p := range [][]int32{{10, 11, 12, 13, 14}, {20, 21, 22, 23, 24, 25, 26}} {
		if _, err := e.Submit(&Request{Prompt: p, N: 2, Params: Params{MaxTokens: 3, Temperature: 1, IgnoreEOS: true},
			Done: func() { done.Add(1) }}); err != nil {
			t.Fatal(err)
		}
	}
	cb.armed.Store(true)
	stopBlocker()
	waitfor.Until(t, 10*time.Second, "the step to be forking the first request's prompt rows", cb.inside.Load)
	giveUpThenRelease(t, e, cb.wedgedBackend, cb.release, &done)
	if n := be.late2.Load(); n != 0 {
		t.Errorf("%d copies of the second request's prompt rows after Shutdown gave up, want none", n)
	}
}

// chooseHangingBackend is a wedgedBackend that is a kernels.RowChooser and
// a kernels.HostCopier whose CopyToHost hangs once armed, until release is
// closed; it counts the rows chosen once wedged.
type chooseHangingBackend struct {
	*wedgedBackend
	armed, inside atomic.Bool
	release       chan struct{}
	late          atomic.Int64
}

func (g *chooseHangingBackend) CopyToHost(dst, src []float32, n int) {
	if g.armed.Load() {
		g.inside.Store(true)
		<-g.release
	}
	kernels.NeedCopyToHost(dst, src, n)
	copy(dst[:n], src[:n])
}

func (g *chooseHangingBackend) AllocHostF32(n int) ([]float32, error) { return make([]float32, n), nil }
func (g *chooseHangingBackend) FreeHostF32([]float32)                 { g.free() }

func (g *chooseHangingBackend) ChooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	if g.wedged.Load() {
		g.late.Add(int64(len(dst)))
	}
	ref.ChooseRows(dst, logits, V, rows, invTemp, u)
}

// TestGiveUpDuringDeviceChoice: on a backend that chooses tokens where
// the logits live, when Shutdown gives up on a step stuck copying the
// rows the host's sampler needs (top_p), the step that comes back asks
// the backend for no choice of the other rows (greedy), frees nothing and
// calls no Done hook. Before, chooseOnDevice went on to ChooseRows.
func TestGiveUpDuringDeviceChoice(t *testing.T) {
	be := &chooseHangingBackend{wedgedBackend: newWedged(), release: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 2, Tokenizer: tok, StopGrace: 50 * time.Millisecond})
	var done atomic.Int64
	greedy, err := e.Submit(&Request{Prompt: []int32{1, 2, 3}, N: 1, Params: Params{MaxTokens: 100000, IgnoreEOS: true},
		Done: func() { done.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := greedy.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	be.armed.Store(true) // only a host row is copied: the top_p request's
	if _, err := e.Submit(&Request{Prompt: []int32{4, 5, 6}, N: 1, Params: Params{MaxTokens: 3, Temperature: 1, TopP: 0.9},
		Done: func() { done.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the step to be copying the top_p row to the host", be.inside.Load)
	giveUpThenRelease(t, e, be.wedgedBackend, be.release, &done)
	if n := be.late.Load(); n != 0 {
		t.Errorf("%d rows chosen by the backend after Shutdown gave up on it, want none", n)
	}
}

// freeHangingBackend is a wedgedBackend whose nth free of a slice of size
// floats, once armed, hangs until release is closed: the last free of a
// sequence's rows stuck on the device.
type freeHangingBackend struct {
	*wedgedBackend
	size, nth int
	armed     atomic.Bool
	seen      atomic.Int64
	inside    atomic.Bool
	release   chan struct{}
}

func (g *freeHangingBackend) FreeF32(s []float32) {
	if g.armed.Load() && len(s) == g.size && g.seen.Add(1) == int64(g.nth) {
		g.inside.Store(true)
		<-g.release
		return
	}
	g.wedgedBackend.FreeF32(s)
}

// TestGiveUpDuringRowsFree: when Shutdown gives up on the engine while a
// finished request's rows are being freed (the free stuck on the device),
// the free that comes back later does not call the request's Done hook
// (hone-serve's frees its adapter on that device), as Shutdown's doc says
// of a give-up. Before, finish went on to retire the request.
func TestGiveUpDuringRowsFree(t *testing.T) {
	be := &freeHangingBackend{wedgedBackend: newWedged(), release: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 1, Tokenizer: tok, StopGrace: 50 * time.Millisecond})
	// 3 prompt tokens and 2 generated: one buffer of 5 rows for the keys
	// and one for the values of each layer, the last one freed hangs.
	be.size, be.nth = 5*m.Config.KVHeads*m.Config.HeadDim, 2*m.Config.Layers
	be.armed.Store(true)
	var done atomic.Int64
	if _, err := e.Submit(&Request{Prompt: []int32{1, 2, 3}, N: 1, Params: Params{MaxTokens: 2, IgnoreEOS: true},
		Done: func() { done.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the finished request's rows to be freeing", be.inside.Load)
	giveUpThenRelease(t, e, be.wedgedBackend, be.release, &done)
}

// TestGiveUpDuringForget: when Shutdown gives up on the engine while it
// frees the kept prefix rows of an adapter whose weights went
// (ForgetAdapter, here from a Done hook as hone-serve's reaches it), the
// free that comes back frees no other adapter's rows on a backend that
// may be wedged.
func TestGiveUpDuringForget(t *testing.T) {
	be := &freeHangingBackend{wedgedBackend: newWedged(), release: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 1, Tokenizer: tok, PrefixCaching: true, StopGrace: 50 * time.Millisecond})
	var ads []*model.Adapter
	for seed := range uint64(2) {
		ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: model.AllModules()}, seed+1)
		if err != nil {
			t.Fatal(err)
		}
		if err := ad.Place(be); err != nil {
			t.Fatal(err)
		}
		ads = append(ads, ad)
		run(t, e, &Request{Prompt: []int32{1, 2, 3}, N: 1, Adapter: ad, Params: Params{MaxTokens: 2, IgnoreEOS: true}})
	}
	// The first adapter's rows (3 prompt tokens and 2 generated: a buffer
	// of 5 rows for the keys and one for the values of each layer) hang
	// at their last free.
	be.size, be.nth = 5*m.Config.KVHeads*m.Config.HeadDim, 2*m.Config.Layers
	run(t, e, &Request{Prompt: []int32{7, 8, 9}, N: 1, Params: Params{MaxTokens: 2, IgnoreEOS: true}, Done: func() {
		e.ForgetAdapter(ads[0])
		e.ForgetAdapter(ads[1])
		be.armed.Store(true)
	}})
	waitfor.Until(t, 10*time.Second, "the first adapter's kept rows to be freeing", be.inside.Load)
	var done atomic.Int64
	giveUpThenRelease(t, e, be.wedgedBackend, be.release, &done)
}

// TestGiveUpDuringSiblingsFree: when Shutdown gives up on the engine while
// the first of two choices that end in the same step has its rows' free
// stuck on the device, the free that comes back asks the backend for no
// other free: the second choice's rows are left, as everything is once
// Shutdown gave up. Before, finish checked for the give-up only after its
// own free, so the next choice ended in that step freed its rows on a
// backend that may be wedged (and the engine's goroutine hung there).
func TestGiveUpDuringSiblingsFree(t *testing.T) {
	be := &freeHangingBackend{wedgedBackend: newWedged(), release: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 2, Tokenizer: tok, StopGrace: 50 * time.Millisecond})
	// Each choice: 3 prompt tokens and 2 generated, one buffer of 5 rows
	// for the keys and one for the values of each layer; the first
	// choice's last free hangs.
	be.size, be.nth = 5*m.Config.KVHeads*m.Config.HeadDim, 2*m.Config.Layers
	be.armed.Store(true)
	var done atomic.Int64
	if _, err := e.Submit(&Request{Prompt: []int32{1, 2, 3}, N: 2, Params: Params{MaxTokens: 2, Temperature: 1, IgnoreEOS: true},
		Done: func() { done.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the first choice's rows to be freeing", be.inside.Load)
	giveUpThenRelease(t, e, be.wedgedBackend, be.release, &done)
}

// TestGiveUpDuringForgetRows: when Shutdown gives up on the engine while
// it frees the first of an adapter's two sets of kept prefix rows
// (ForgetAdapter), the free that comes back frees not the second set on a
// backend that may be wedged. Before, DropAdapter freed every set of the
// adapter's in one go, whatever happened meanwhile, and the engine's
// goroutine hung in the next free.
func TestGiveUpDuringForgetRows(t *testing.T) {
	be := &freeHangingBackend{wedgedBackend: newWedged(), release: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 1, Tokenizer: tok, PrefixCaching: true, StopGrace: 50 * time.Millisecond})
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ad.Place(be); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]int32{{1, 2, 3}, {4, 5, 6}} { // two sets, neither a prefix of the other
		run(t, e, &Request{Prompt: p, N: 1, Adapter: ad, Params: Params{MaxTokens: 2, IgnoreEOS: true}})
	}
	// Each set: 3 prompt tokens and 2 generated, a buffer of 5 rows for
	// the keys and one for the values of each layer; the first set's last
	// free hangs.
	be.size, be.nth = 5*m.Config.KVHeads*m.Config.HeadDim, 2*m.Config.Layers
	run(t, e, &Request{Prompt: []int32{7, 8, 9}, N: 1, Params: Params{MaxTokens: 2, IgnoreEOS: true}, Done: func() {
		e.ForgetAdapter(ad)
		be.armed.Store(true)
	}})
	waitfor.Until(t, 10*time.Second, "the adapter's first kept rows to be freeing", be.inside.Load)
	var done atomic.Int64
	giveUpThenRelease(t, e, be.wedgedBackend, be.release, &done)
}
