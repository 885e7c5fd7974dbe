package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
	"github.com/hone-rl/hone/format/fileset/s3test"
	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
)

func adapter() *peft.Adapter {
	a := &peft.Adapter{Config: peft.Config{R: 1, LoraAlpha: 2, TargetModules: []string{"q_proj"}}}
	a.Set(0, "q_proj", peft.LoRA{A: []float32{1, 2}, B: []float32{3, 4}, R: 1, In: 2, Out: 2})
	return a
}

func TestSaveLatestRestore(t *testing.T) {
	r := &Run{Dir: filepath.Join(t.TempDir(), "run")}
	if _, ok, err := r.Latest(); ok || err != nil {
		t.Fatalf("fresh run: latest ok=%v err=%v", ok, err)
	}
	m := []float32{0.5, -1}
	for step := 1; step <= 3; step++ {
		st := State{Step: step, OptimizerStep: step, Metrics: map[string]float64{"reward_mean": float64(step % 3)}}
		if err := r.Save(adapter(), []Tensor{{"x.exp_avg", m}}, st, map[string]any{"lr": 0.1}); err != nil {
			t.Fatal(err)
		}
	}
	n, ok, err := r.Latest()
	if err != nil || !ok || n != 3 {
		t.Fatalf("latest %d %v %v", n, ok, err)
	}
	b, _ := os.ReadFile(filepath.Join(r.Dir, runfolder.LatestName))
	if string(b) != "step-000003\n" {
		t.Errorf("latest file %q", b)
	}
	got := []Tensor{{"x.exp_avg", make([]float32, 2)}}
	if err := r.ReadOptimizer(3, got); err != nil || got[0].Values[0] != 0.5 || got[0].Values[1] != -1 {
		t.Errorf("optimizer %v %v", got[0].Values, err)
	}
	if cfg, err := r.ReadConfig(3); err != nil || !strings.Contains(string(cfg), `"lr": 0.1`) {
		t.Errorf("config %s %v", cfg, err)
	}
	if _, err := peft.Read(r.StepDir(2)); err != nil {
		t.Errorf("step folder is not a PEFT adapter: %v", err)
	}
	// Saving an existing step at or below latest is refused; a stale folder
	// above latest (crash before the pointer moved) is replaced.
	if err := r.Save(adapter(), nil, State{Step: 3}, nil); err == nil {
		t.Error("overwrote step 3")
	}
	if err := os.MkdirAll(filepath.Join(r.StepDir(4), "junk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(adapter(), nil, State{Step: 4}, nil); err != nil {
		t.Fatalf("stale step folder: %v", err)
	}
	// Leftovers of a killed save are removed.
	os.MkdirAll(filepath.Join(r.Dir, ".step-000005.tmp-123"), 0o755)
	os.WriteFile(filepath.Join(r.Dir, ".latest.tmp-9"), nil, 0o644)
	if err := r.CleanTemp(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(r.Dir); len(ents) != 5 { // 4 step folders and latest
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("after CleanTemp: %v", names)
	}
	// Keep the last 2 plus the best by reward_mean (step 2: 2 % 3 = 2).
	if err := r.Prune(2, "reward_mean", true); err != nil {
		t.Fatal(err)
	}
	steps, _ := r.Steps()
	if len(steps) != 3 || steps[0] != 2 || steps[1] != 3 || steps[2] != 4 {
		t.Errorf("after prune: %v, want [2 3 4]", steps)
	}
	if b, ok, _ := r.Best(); !ok || b != 2 {
		t.Errorf("best %d %v, want 2", b, ok)
	}
}

func TestRepairMetrics(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	for s := 1; s <= 3; s++ {
		if err := r.AppendMetrics(map[string]float64{"step": float64(s), "loss": float64(s)}); err != nil {
			t.Fatal(err)
		}
	}
	// A torn line from a kill mid-append.
	f, _ := os.OpenFile(filepath.Join(r.Dir, runfolder.MetricsName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":4,"lo`)
	f.Close()
	if err := r.RepairMetrics(2, map[string]float64{"step": 2, "loss": 9}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(r.Dir, runfolder.MetricsName))
	if string(b) != "{\"loss\":1,\"step\":1}\n{\"loss\":2,\"step\":2}\n" {
		t.Errorf("repaired to %q", b)
	}
	// The last saved step's row is restored when it was never written.
	if err := r.RepairMetrics(5, map[string]float64{"step": 5}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(r.Dir, runfolder.MetricsName))
	if !strings.HasSuffix(string(b), "{\"step\":5}\n") {
		t.Errorf("missing row not restored: %q", b)
	}
}

// TestRepairMetricsKeepsWhatItCannotRead: a line that is not a row, other
// than a torn last one, is an error naming it, and the file stays as it
// was; it was dropped without a word, with the rows of other tools or a
// hand edit.
func TestRepairMetricsKeepsWhatItCannotRead(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	path := filepath.Join(r.Dir, runfolder.MetricsName)
	const text = "{\"step\":1,\"loss\":1}\n{\"step\":2,\"note\":\"by hand\"}\n{\"step\":3,\"loss\":3}\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	err := r.RepairMetrics(2, map[string]float64{"step": 2})
	if err == nil || !strings.Contains(err.Error(), runfolder.MetricsName+":2") {
		t.Errorf("RepairMetrics: %v, want an error naming line 2", err)
	}
	if b, _ := os.ReadFile(path); string(b) != text {
		t.Errorf("the file was changed to %q", b)
	}
}

// TestDropStepsAfter: the step folders after last go, whole, and nothing
// of them is left under another name; those up to last stay.
func TestDropStepsAfter(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	for s := 1; s <= 4; s++ {
		if err := os.MkdirAll(filepath.Join(r.StepDir(s), "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.StepDir(s), "sub", "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.DropStepsAfter(2); err != nil {
		t.Fatal(err)
	}
	steps, err := r.Steps()
	if err != nil || !slices.Equal(steps, []int{1, 2}) {
		t.Errorf("steps after DropStepsAfter(2): %v %v, want [1 2]", steps, err)
	}
	ents, _ := os.ReadDir(r.Dir)
	if len(ents) != 2 {
		t.Errorf("run folder holds %d entries, want the 2 steps kept", len(ents))
	}
}

func TestLockAndManifest(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	unlock, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lock(); !errors.Is(err, ErrLocked) {
		t.Errorf("second lock: %v", err)
	}
	unlock()
	unlock2, err := r.Lock()
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()

	p := filepath.Join(r.Dir, "a.parquet")
	os.WriteFile(p, []byte("abc"), 0o644)
	fe, err := HashFile(context.Background(), p)
	if err != nil || fe.SHA256 != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" || fe.Size != 3 {
		t.Fatalf("hash %+v %v", fe, err)
	}
	// A watched folder named by a file:// URL lists its files as URLs.
	if fu, err := HashFile(context.Background(), "file://"+filepath.ToSlash(p)); err != nil || fu.SHA256 != fe.SHA256 {
		t.Fatalf("hash by file URL %+v %v", fu, err)
	}
	m := Manifest{Consumed: []FileEntry{fe}, Pending: &Session{StartStep: 1, EndStep: 3}}
	if err := r.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadManifest()
	if err != nil || !got.Has(fe.SHA256) || got.Has("x") || got.Pending.EndStep != 3 {
		t.Errorf("manifest %+v %v", got, err)
	}
}

// TestStepNamesAsServeReadsThem: training takes as a step folder, or as what
// latest names, exactly what hone-serve does (runfolder.ParseStepName).
// Before, a folder "step-+5" or a 13-digit step counted as a step here while
// serve ignored it, and latest "step-+5" resumed step 5 while serve refused it.
func TestStepNamesAsServeReadsThem(t *testing.T) {
	r := &Run{Dir: t.TempDir()}
	if err := r.Save(adapter(), nil, State{Step: 5}, nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"step-+7", "step-0000000000008", "step- 9"} {
		if err := os.MkdirAll(filepath.Join(r.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if steps, err := r.Steps(); err != nil || len(steps) != 1 || steps[0] != 5 {
		t.Errorf("Steps = %v, %v; want [5]: no other folder is a step folder to serve", steps, err)
	}
	latest := filepath.Join(r.Dir, runfolder.LatestName)
	for _, text := range []string{"step-+5", "step-0000000000005", "../step-000005"} {
		if err := os.WriteFile(latest, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if n, ok, err := r.Latest(); err == nil || ok {
			t.Errorf("latest %q: step %d, ok %v; want the refusal hone-serve gives", text, n, ok)
		} else if !strings.Contains(err.Error(), latest) {
			t.Errorf("latest %q: %v; want it to name %s", text, err, latest)
		}
		if _, err := runfolder.Locate(filepath.Dir(r.Dir), filepath.Base(r.Dir)); err == nil {
			t.Errorf("latest %q: serve's Locate accepts it", text)
		}
	}
}

// SameStat takes a file as a consumed entry only when its path, size,
// modification time and ETag (where both have one) are the entry's, the
// entry's stat was not racy, and it survived manifest.json (a local
// file's time to the nanosecond).
func TestSameStat(t *testing.T) {
	mod := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	e := FileEntry{Path: "in/a.parquet", SHA256: "ab", Size: 10, ModTime: mod, ETag: `"e1"`, HashedAt: mod.Add(time.Hour)}
	run := &Run{Dir: t.TempDir()}
	if err := run.WriteManifest(Manifest{Consumed: []FileEntry{e}}); err != nil {
		t.Fatal(err)
	}
	man, err := run.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	e = man.Consumed[0]
	now := fileset.FileInfo{Size: 10, ModTime: mod.UTC(), ETag: `"e1"`}
	racy := e
	racy.HashedAt = mod.Add(RacyWindow / 2)
	old := FileEntry{Path: e.Path, SHA256: e.SHA256, Size: e.Size}
	for _, c := range []struct {
		name string
		e    FileEntry
		path string
		now  fileset.FileInfo
		want bool
	}{
		{"same", e, e.Path, now, true},
		{"no ETag now", e, e.Path, fileset.FileInfo{Size: 10, ModTime: mod}, true},
		{"other path", e, "in/b.parquet", now, false},
		{"other size", e, e.Path, fileset.FileInfo{Size: 11, ModTime: mod, ETag: `"e1"`}, false},
		{"other time", e, e.Path, fileset.FileInfo{Size: 10, ModTime: mod.Add(time.Nanosecond), ETag: `"e1"`}, false},
		{"other ETag", e, e.Path, fileset.FileInfo{Size: 10, ModTime: mod, ETag: `"e2"`}, false},
		{"racy", racy, e.Path, now, false},
		{"no stat recorded", old, e.Path, now, false},
		{"no time now", e, e.Path, fileset.FileInfo{Size: 10, ETag: `"e1"`}, false},
	} {
		if got := c.e.SameStat(c.path, c.now); got != c.want {
			t.Errorf("%s: SameStat = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCheckUnchangedNamesObjectWithoutQuery: an input object replaced
// between the hash before training and the one after fails the run,
// naming the object as the user names it, without the query that opens
// its bucket (endpoint=…&use_path_style=…): a folder's listed objects
// carry it, and it said nothing of which object changed.
func TestCheckUnchangedNamesObjectWithoutQuery(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	ctx := context.Background()
	name := srv.URL("bkt", "in/round1.parquet")
	if err := fileset.WriteFile(ctx, name, []byte("one")); err != nil {
		t.Fatal(err)
	}
	in := fileset.Files(name)
	defer in.Close()
	before, err := HashSet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(ctx, name, []byte("two")); err != nil {
		t.Fatal(err)
	}
	err = CheckUnchanged(ctx, in, before)
	if err == nil || !strings.Contains(err.Error(), "input s3://bkt/in/round1.parquet changed") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("CheckUnchanged of a replaced object: %v; want an error naming s3://bkt/in/round1.parquet without its query", err)
	}
}
