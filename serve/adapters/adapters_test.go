package adapters

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/model"
)

func testConfig(t *testing.T) *model.Config {
	t.Helper()
	return config(32)
}

// config is a small model shape; nothing is computed, only shapes checked.
func config(hidden int) *model.Config {
	return &model.Config{Family: "qwen3", Vocab: 259, Hidden: hidden, Intermediate: 88, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: hidden / 4, RMSNormEps: 1e-6, QKNorm: true}
}

func write(t *testing.T, c *model.Config, dir string, seed uint64) *model.Adapter {
	t.Helper()
	ad, err := model.NewAdapter(c, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: []model.Module{model.ModQ, model.ModV}}, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := model.WriteAdapter(dir, ad, "base"); err != nil {
		t.Fatal(err)
	}
	return ad
}

func TestPollLatestKeepAndRefuse(t *testing.T) {
	c := testConfig(t)
	root := t.TempDir()
	var logs bytes.Buffer
	r := New(Options{Dir: root, Config: c, MaxKeep: 2, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	run := filepath.Join(root, "exp")
	// No latest file: the highest step folder.
	write(t, c, filepath.Join(run, "step-000001"), 1)
	write(t, c, filepath.Join(run, "step-000003"), 3)
	if n := r.Poll(context.Background()); n != 1 {
		t.Fatalf("loaded %d, want 1", n)
	}
	if a, err := r.Resolve("exp"); err != nil || a.Step != 3 || a.Name() != "exp@3" {
		t.Fatalf("Resolve(exp) = %+v, %v", a, err)
	}
	// latest pointing elsewhere wins.
	write(t, c, filepath.Join(run, "step-000005"), 5)
	os.WriteFile(filepath.Join(run, "latest"), []byte("step-000005\n"), 0o644)
	r.Poll(context.Background())
	write(t, c, filepath.Join(run, "step-000006"), 6)
	os.WriteFile(filepath.Join(run, "latest"), []byte("step-000006"), 0o644)
	r.Poll(context.Background())
	if got := r.Names(); !slices.Equal(got, []string{"exp", "exp@5", "exp@6"}) {
		t.Fatalf("names %v (max keep 2)", got)
	}
	if _, err := r.Resolve("exp@3"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("dropped step: %v", err)
	}
	for _, bad := range []string{"exp@05", "exp@-1", "../exp", "exp@6/..", "nope", "exp@"} {
		if _, err := r.Resolve(bad); !errors.Is(err, ErrUnknown) {
			t.Errorf("Resolve(%q): %v", bad, err)
		}
	}
	// A broken step (weights of the wrong shape) is refused and logged; the
	// previous step keeps serving; once fixed it loads.
	bad := filepath.Join(run, "step-000007")
	write(t, config(48), bad, 7)
	os.WriteFile(filepath.Join(run, "latest"), []byte("step-000007"), 0o644)
	if n := r.Poll(context.Background()); n != 0 {
		t.Fatalf("loaded a broken adapter")
	}
	if a, _ := r.Resolve("exp"); a == nil || a.Step != 6 {
		t.Fatalf("after a broken step, exp = %+v", a)
	}
	if !strings.Contains(logs.String(), "refusing adapter") || !strings.Contains(logs.String(), "step-000007") {
		t.Fatalf("log lacks the refusal:\n%s", logs.String())
	}
	before := logs.Len()
	r.Poll(context.Background())
	if logs.Len() != before {
		t.Fatalf("an unchanged broken folder is retried and logged again:\n%s", logs.String()[before:])
	}
	os.RemoveAll(bad)
	write(t, c, bad, 7)
	if n := r.Poll(context.Background()); n != 1 {
		t.Fatal("fixed step 7 not loaded")
	}
	// latest naming a path outside the run is refused.
	os.WriteFile(filepath.Join(run, "latest"), []byte("../other/step-000001"), 0o644)
	if n := r.Poll(context.Background()); n != 0 {
		t.Fatal("latest with a path was followed")
	}
	if !strings.Contains(logs.String(), "not a step-N folder") {
		t.Fatalf("log lacks the bad latest:\n%s", logs.String())
	}
	// A run folder with an invalid name is ignored.
	write(t, c, filepath.Join(root, "bad name", "step-1"), 1)
	r.Poll(context.Background())
	for _, n := range r.Names() {
		if strings.HasPrefix(n, "bad") {
			t.Fatalf("served %q", n)
		}
	}
}
