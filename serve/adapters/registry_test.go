package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/train/model"
)

// records is a slog handler that keeps every record, to count log lines.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// count returns how many records at level have message msg and, for every
// key=value pair in attrs, an attribute whose text contains the value.
func (h *records) count(level slog.Level, msg string, attrs ...string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level != level || r.Message != msg {
			continue
		}
		ok := true
		for i := 0; i+1 < len(attrs); i += 2 {
			found := false
			r.Attrs(func(a slog.Attr) bool {
				found = found || a.Key == attrs[i] && strings.Contains(a.Value.String(), attrs[i+1])
				return true
			})
			ok = ok && found
		}
		if ok {
			n++
		}
	}
	return n
}

func (h *records) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range h.recs {
		fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%s", a.Key, a.Value); return true })
		b.WriteByte('\n')
	}
	return b.String()
}

func newLogged(dir string, c *model.Config) (*Registry, *records) {
	h := &records{}
	return New(Options{Dir: dir, Config: c, MaxKeep: 2, Log: slog.New(h)}), h
}

func setLatest(t *testing.T, runDir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(runDir, "latest"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func polls(r *Registry, n int) []int {
	var got []int
	for range n {
		got = append(got, r.Poll(context.Background()))
	}
	return got
}

const (
	msgLoaded  = "adapters: loaded"
	msgRefused = "adapters: refusing adapter; the previous one keeps serving"
	msgRunWarn = "adapters: cannot use the run's current step; the previous one keeps serving"
	msgDirWarn = "adapters: cannot read the adapters folder; serving what is loaded"
	// msgDirNotYet: the folder does not exist and never has since start,
	// as on a first run before the first step is written: said once, at
	// info, not warned.
	msgDirNotYet = "adapters: the adapters folder does not exist yet; serving the base model until a step is written there"
	// msgPlaceWarn: a step that loaded could not be placed on the backend
	// (its memory full for now); retried at every poll.
	msgPlaceWarn = "adapters: cannot place the step on the backend; the previous one keeps serving, retrying at the next poll"
)

// TestLatestRollback: latest is what the operator says is current. Rolled
// back to an older step, "<run>" answers with that step, which is read once
// (not at every poll); a step still loaded is switched to without a read;
// the current step is never the one dropped; a rewritten folder is read
// again.
func TestLatestRollback(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	r, logs := newLogged(root, c)
	run := filepath.Join(root, "exp")
	ads := map[int]*model.Adapter{}
	for _, n := range []int{1, 2, 3} {
		ads[n] = write(t, c, filepath.Join(run, fmt.Sprintf("step-%06d", n)), uint64(n))
	}
	setLatest(t, run, "step-000002\n")
	polls(r, 1)
	setLatest(t, run, "step-000003\n")
	if got := polls(r, 1); got[0] != 1 {
		t.Fatalf("poll after latest moved to step 3 loaded %d", got[0])
	}
	// Steps 2 and 3 fill MaxKeep; the operator rolls back to step 1.
	setLatest(t, run, "step-000001\n")
	if got := polls(r, 4); !slices.Equal(got, []int{1, 0, 0, 0}) {
		t.Fatalf("loads per poll after the rollback: %v, want [1 0 0 0]", got)
	}
	if n := logs.count(slog.LevelInfo, msgLoaded, "model", "exp@1"); n != 1 {
		t.Fatalf("exp@1 loaded %d times, want once:\n%s", n, logs)
	}
	a, err := r.Resolve("exp")
	if err != nil || a.Step != 1 {
		t.Fatalf(`Resolve("exp") = %+v, %v; want step 1 (latest)`, a, err)
	}
	if got, want := a.Weights.Layers[0][model.ModQ].A[0], ads[1].Layers[0][model.ModQ].A[0]; got != want {
		t.Fatalf("exp serves A[0] = %v, step 1 has %v", got, want)
	}
	three, err := r.Resolve("exp@3")
	if err != nil {
		t.Fatalf("exp@3 was dropped though only 2 steps are loaded: %v", err)
	}
	// Forward again to the loaded step 3: a switch, no read.
	setLatest(t, run, "step-000003")
	if got := polls(r, 2); !slices.Equal(got, []int{0, 0}) {
		t.Fatalf("switching to loaded step 3 loaded %v", got)
	}
	if a, _ := r.Resolve("exp"); a.Adapter != three.Adapter {
		t.Fatalf(`Resolve("exp") = %+v, want the loaded step 3`, a)
	}
	// Step 2: step 1, least recently current, is dropped, not 3 or 2.
	setLatest(t, run, "step-000002")
	polls(r, 1)
	if got := r.Names(); !slices.Equal(got, []string{"exp", "exp@2", "exp@3"}) {
		t.Fatalf("names %v, want exp exp@2 exp@3", got)
	}
	// The trainer rewrites step 2 (a resumed run): it is read again.
	dir2 := filepath.Join(run, "step-000002")
	os.RemoveAll(dir2)
	ad, err := model.NewAdapter(c, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: []model.Module{model.ModQ}}, 22)
	if err != nil {
		t.Fatal(err)
	}
	if err := model.WriteAdapter(dir2, ad, "base"); err != nil {
		t.Fatal(err)
	}
	if got := polls(r, 2); !slices.Equal(got, []int{1, 0}) {
		t.Fatalf("rewritten step 2: loads %v, want [1 0]", got)
	}
	if a, _ := r.Resolve("exp"); a.Weights.Layers[0][model.ModV] != nil || a.Weights.Layers[0][model.ModQ].A[0] != ad.Layers[0][model.ModQ].A[0] {
		t.Fatal("exp does not serve the rewritten step 2")
	}
}

// TestSymlinkOutsideRefused: a step folder, an adapter file or a run folder
// that leads outside the adapters folder is refused with a warning logged
// once; links that stay inside (the adapters folder itself, a run alias)
// are followed.
func TestSymlinkOutsideRefused(t *testing.T) {
	c := testConfig(t)
	realRoot, outside := t.TempDir(), t.TempDir()
	root := filepath.Join(t.TempDir(), "adapters")
	if err := os.Symlink(realRoot, root); err != nil {
		t.Fatal(err)
	}
	r, logs := newLogged(root, c)
	run := filepath.Join(root, "exp")
	write(t, c, filepath.Join(run, "step-000001"), 1)
	setLatest(t, run, "step-000001")
	if polls(r, 1)[0] != 1 {
		t.Fatalf("step 1 under a linked adapters folder not loaded:\n%s", logs)
	}
	// A step folder linked to elsewhere.
	write(t, c, filepath.Join(outside, "step-000002"), 2)
	os.Symlink(filepath.Join(outside, "step-000002"), filepath.Join(run, "step-000002"))
	setLatest(t, run, "step-000002")
	if got := polls(r, 3); !slices.Equal(got, []int{0, 0, 0}) {
		t.Fatalf("a step folder linked outside was loaded: %v", got)
	}
	if a, _ := r.Resolve("exp"); a == nil || a.Step != 1 {
		t.Fatalf("exp = %+v, want step 1 still", a)
	}
	if n := logs.count(slog.LevelWarn, msgRunWarn, "err", "outside the adapters folder"); n != 1 {
		t.Fatalf("%d warnings about the outside link, want 1:\n%s", n, logs)
	}
	if _, err := runfolder.Locate(root, "exp"); !errors.Is(err, runfolder.ErrOutside) {
		t.Fatalf("Locate: %v, want ErrOutside", err)
	}
	// A real step folder whose weights file is a link to elsewhere.
	dir3 := filepath.Join(run, "step-000003")
	write(t, c, dir3, 3)
	os.Remove(filepath.Join(dir3, peft.WeightsName))
	os.Symlink(filepath.Join(outside, "step-000002", peft.WeightsName), filepath.Join(dir3, peft.WeightsName))
	setLatest(t, run, "step-000003")
	if got := polls(r, 2); !slices.Equal(got, []int{0, 0}) {
		t.Fatalf("a weights file linked outside was loaded: %v", got)
	}
	if n := logs.count(slog.LevelWarn, msgRunWarn, "err", "step-000003/adapter_model.safetensors resolves to"); n != 1 {
		t.Fatalf("%d warnings about the linked file, want 1:\n%s", n, logs)
	}
	// A run folder linked to elsewhere; a run alias inside is followed.
	write(t, c, filepath.Join(outside, "other", "step-000001"), 1)
	os.Symlink(filepath.Join(outside, "other"), filepath.Join(root, "ext"))
	os.Symlink("exp", filepath.Join(root, "alias"))
	setLatest(t, run, "step-000001")
	polls(r, 2)
	if got := r.Names(); !slices.Equal(got, []string{"alias", "alias@1", "exp", "exp@1"}) {
		t.Fatalf("names %v, want alias and exp at step 1 and nothing of ext", got)
	}
	if n := logs.count(slog.LevelWarn, msgRunWarn, "run", "ext"); n != 1 {
		t.Fatalf("%d warnings about the linked run ext, want 1:\n%s", n, logs)
	}
}

// TestNonFiniteRefused: an adapter with a NaN or infinite weight (float32
// or bf16 on disk) is refused, logged once, and the previous step keeps
// serving.
func TestNonFiniteRefused(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	r, logs := newLogged(root, c)
	run := filepath.Join(root, "exp")
	write(t, c, filepath.Join(run, "step-000001"), 1)
	polls(r, 1)
	ad, err := model.NewAdapter(c, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: []model.Module{model.ModQ, model.ModV}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	ad.Layers[1][model.ModV].B[3] = float32(math.NaN())
	if err := model.WriteAdapter(filepath.Join(run, "step-000002"), ad, "base"); err != nil {
		t.Fatal(err)
	}
	if got := polls(r, 3); !slices.Equal(got, []int{0, 0, 0}) {
		t.Fatalf("an adapter with a NaN weight was loaded: %v", got)
	}
	if a, _ := r.Resolve("exp"); a == nil || a.Step != 1 {
		t.Fatalf("exp = %+v, want step 1 still", a)
	}
	if n := logs.count(slog.LevelError, msgRefused, "err", `layers.1.self_attn.v_proj.lora_B.weight" holds NaN at element 3`); n != 1 {
		t.Fatalf("%d refusals naming the NaN, want 1:\n%s", n, logs)
	}
	ad.Layers[1][model.ModV].B[3] = 0
	ad.Layers[0][model.ModQ].A[5] = float32(math.Inf(1))
	pa := ad.ToPEFT("base")
	pa.DType = safetensors.BF16
	if err := peft.Write(filepath.Join(run, "step-000003"), pa); err != nil {
		t.Fatal(err)
	}
	if got := polls(r, 2); !slices.Equal(got, []int{0, 0}) {
		t.Fatalf("a bf16 adapter with +Inf was loaded: %v", got)
	}
	if n := logs.count(slog.LevelError, msgRefused, "err", `layers.0.self_attn.q_proj.lora_A.weight" holds +Inf at element 5`); n != 1 {
		t.Fatalf("%d refusals naming the +Inf, want 1:\n%s", n, logs)
	}
	if a, _ := r.Resolve("exp"); a == nil || a.Step != 1 {
		t.Fatalf("exp = %+v, want step 1 still", a)
	}
}

// TestWarnsOnce: a missing adapters folder and a bad latest file are each
// logged once while they last, and again when they change or come back. A
// folder that has not existed since start (a first run, before its first
// step) is said once at info: hone-serve is started before training, as
// the README's round does, and warned on every first run.
func TestWarnsOnce(t *testing.T) {
	c := testConfig(t)
	root := filepath.Join(t.TempDir(), "adapters")
	r, logs := newLogged(root, c)
	dirWarns := func() int { return logs.count(slog.LevelWarn, msgDirWarn) }
	polls(r, 3)
	if n, m := dirWarns(), logs.count(slog.LevelInfo, msgDirNotYet, "dir", root); n != 0 || m != 1 {
		t.Fatalf("missing folder over 3 polls: %d warnings, %d notes; want none and 1:\n%s", n, m, logs)
	}
	os.Mkdir(root, 0o755)
	polls(r, 2)
	os.Remove(root)
	polls(r, 3)
	if n := dirWarns(); n != 1 {
		t.Fatalf("folder gone after it existed: %d warnings, want 1:\n%s", n, logs)
	}
	os.Mkdir(root, 0o755)
	polls(r, 2)
	os.Remove(root)
	polls(r, 3)
	if n := dirWarns(); n != 2 {
		t.Fatalf("folder gone again: %d warnings in all, want 2:\n%s", n, logs)
	}
	run := filepath.Join(root, "exp")
	write(t, c, filepath.Join(run, "step-000001"), 1)
	latestWarns := func() int { return logs.count(slog.LevelWarn, msgRunWarn, "err", "latest names") }
	setLatest(t, run, "step-x")
	polls(r, 3)
	if n := latestWarns(); n != 1 {
		t.Fatalf("bad latest over 3 polls: %d warnings, want 1:\n%s", n, logs)
	}
	setLatest(t, run, "../other/step-000001")
	polls(r, 3)
	if n := latestWarns(); n != 2 {
		t.Fatalf("latest changed to another bad name: %d warnings in all, want 2:\n%s", n, logs)
	}
	setLatest(t, run, "step-000009")
	polls(r, 3)
	if n := logs.count(slog.LevelWarn, msgRunWarn, "err", "names step-000009, which does not exist"); n != 1 {
		t.Fatalf("latest naming a missing folder over 3 polls: %d warnings, want 1:\n%s", n, logs)
	}
	setLatest(t, run, "step-000001")
	if got := polls(r, 2); !slices.Equal(got, []int{1, 0}) {
		t.Fatalf("fixed latest: loads %v", got)
	}
	setLatest(t, run, "step-x")
	polls(r, 2)
	if n := latestWarns(); n != 4 { // step-x, ../other, step-000009, step-x
		t.Fatalf("bad latest back again: %d warnings in all, want 4:\n%s", n, logs)
	}
	if n := dirWarns(); n != 2 {
		t.Fatalf("folder warnings changed to %d", n)
	}
}
