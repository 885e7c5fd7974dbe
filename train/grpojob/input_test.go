package grpojob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestUnscoredRowsRefused: a trajectory with neither a reward nor an error
// was never scored; the run refuses the input as bad input, naming the
// file, row, group and trajectory of each, and writes nothing.
func TestUnscoredRowsRefused(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	writeGroups(t, md, b, 2, 3, varied)
	gs, err := trajectory.ReadFile(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	gs[1].Trajectories[0].Reward = nil // row 3 of b
	gs[1].Trajectories[2].Reward = nil // row 5 of b
	if err := trajectory.WriteFile(context.Background(), b, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r", a, b)
	var log bytes.Buffer
	err = runWith(context.Background(), backend(t), o, textLog(&log))
	if !errors.Is(err, stageerr.ErrBadInput) {
		t.Fatalf("run: %v, want bad input\n%s", err, log.String())
	}
	for _, want := range []string{
		"2 trajectories have no reward",
		fmt.Sprintf("%s row 3 (group %s, trajectory %s)", b, gs[1].ID, gs[1].Trajectories[0].ID),
		fmt.Sprintf("%s row 5 (group %s, trajectory %s)", b, gs[1].ID, gs[1].Trajectories[2].ID),
		"hone-score",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "adapters")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused input left the adapters folder behind (%v)", err)
	}
}

// TestBadInputFilesAreBadInput: a file that is not Parquet, or is cut
// short, is bad input naming the file.
func TestBadInputFilesAreBadInput(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	good := filepath.Join(dir, "good.parquet")
	writeGroups(t, md, good, 2, 3, varied)
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"garbage.parquet":   []byte("PAR1 this is not a parquet file PAR1"),
		"truncated.parquet": whole[:len(whole)/2],
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		err := runWith(context.Background(), backend(t), baseOptions(md, filepath.Join(dir, "adapters"), "r", path), nil)
		if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want bad input naming the file", name, err)
		}
	}
}

// Bad options are usage errors of Run itself (hone-train no longer checks
// them first), and a run without a backend stops before touching anything.
func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions("", filepath.Join(dir, "adapters"), "r", filepath.Join(dir, "a.parquet"))
	o.Backend = backend(t)
	if err := Run(context.Background(), o); !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--model") {
		t.Errorf("no --model: %v, want a usage error naming the flag", err)
	}
	o = baseOptions(filepath.Join(dir, "model"), filepath.Join(dir, "adapters"), "r", filepath.Join(dir, "a.parquet"))
	if err := Run(context.Background(), o); err == nil || errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "Backend") {
		t.Errorf("no backend: %v, want a failure naming Options.Backend", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "adapters")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left %s behind (%v)", filepath.Join(dir, "adapters"), err)
	}
}

// TestInfiniteRewardRefused: a reward of ±Inf has no advantage (r − mean
// is NaN); like an unscored row it is bad input naming the file and row,
// refused before anything is written, rather than a step stopped as not
// finite with advice to lower --lr.
func TestInfiniteRewardRefused(t *testing.T) {
	dir := t.TempDir()
	md, a := editedGroups(t, dir, func(gs []trajectory.Group) {
		gs[1].Trajectories[1].Reward = trajectory.Float64(math.Inf(1)) // row 4 of a
	})
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r", a)
	var log bytes.Buffer
	err := runWith(context.Background(), backend(t), o, textLog(&log))
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), fmt.Sprintf("%s row 4", a)) {
		t.Fatalf("run: %v, want bad input naming %s row 4\n%s", err, a, log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "adapters")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused input left the adapters folder behind (%v)", err)
	}
}

// TestImpossibleLogprobsRefused: a sampling logprob is ≤ 0, or NaN where
// unknown. +Inf, −Inf and a value clearly above 0 (a probability or a
// logit written into the field) are bad input naming the file, row and
// field, refused before anything is written; they used to pass (only NaN
// was looked at) and went into the importance ratio. A float rounding
// just above 0 is taken.
func TestImpossibleLogprobsRefused(t *testing.T) {
	dir := t.TempDir()
	var want []string
	md, a := editedGroups(t, dir, func(gs []trajectory.Group) {
		a := filepath.Join(dir, "a.parquet")
		// set puts v at the second logprob of the trainable turn of row
		// 3g+i and returns that turn's field name.
		set := func(g, i int, v float32) string {
			t.Helper()
			msgs := gs[g].Trajectories[i].Messages
			for k := range msgs {
				if msgs[k].Trainable && len(msgs[k].Logprobs) > 1 {
					msgs[k].Logprobs[1] = v
					return fmt.Sprintf("messages[%d].logprobs[1] is", k)
				}
			}
			t.Fatalf("row %d has no trainable turn with logprobs", 3*g+i)
			return ""
		}
		set(0, 0, 1e-7) // row 0: rounding, taken
		want = []string{
			fmt.Sprintf("%s row 1 (group %s, trajectory %s: %s +Inf)", a, gs[0].ID, gs[0].Trajectories[1].ID, set(0, 1, float32(math.Inf(1)))),
			fmt.Sprintf("%s row 3 (group %s, trajectory %s: %s 0.5)", a, gs[1].ID, gs[1].Trajectories[0].ID, set(1, 0, 0.5)),
			fmt.Sprintf("%s row 5 (group %s, trajectory %s: %s -Inf)", a, gs[1].ID, gs[1].Trajectories[2].ID, set(1, 2, float32(math.Inf(-1)))),
		}
	})
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r", a)
	var log bytes.Buffer
	err := runWith(context.Background(), backend(t), o, textLog(&log))
	if !errors.Is(err, stageerr.ErrBadInput) {
		t.Fatalf("run: %v, want bad input\n%s", err, log.String())
	}
	for _, w := range append(want, "3 trajectories have a sampling logprob that no sampler gives") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), " row 0 ") {
		t.Errorf("error %q names row 0, whose logprob is a rounding above 0", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "adapters")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused input left the adapters folder behind (%v)", err)
	}
}

// editedGroups writes the tiny model and an input of 2 groups of 3 in dir,
// edited by edit before it is written; it returns the model folder and
// the input file.
func editedGroups(t *testing.T, dir string, edit func(gs []trajectory.Group)) (md, a string) {
	t.Helper()
	md = tinyModel(t, dir)
	a = filepath.Join(dir, "a.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	gs, err := trajectory.ReadFile(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	edit(gs)
	if err := trajectory.WriteFile(context.Background(), a, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return md, a
}

// TestBadLoRAOptionsAreUsage: a LoRA shape the model cannot take (a
// misspelt --targets, --rank 0) is a usage error (exit code 2), refused
// before the run folder is made.
func TestBadLoRAOptionsAreUsage(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	for name, set := range map[string]func(*Options){
		"targets": func(o *Options) { o.Targets = []string{"q_proj", "qproj"} },
		"rank":    func(o *Options) { o.Rank = 0 },
		// The same projection twice (q is short for q_proj): the saved
		// adapter_config.json would list it twice, which PEFT refuses.
		"targets twice": func(o *Options) { o.Targets = []string{"q_proj", "v_proj", "q"} },
	} {
		out := filepath.Join(dir, "adapters-"+strings.ReplaceAll(name, " ", "-"))
		o := baseOptions(md, out, "r", a)
		set(&o)
		err := runWith(context.Background(), backend(t), o, nil)
		flag, _, _ := strings.Cut(name, " ")
		if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), "--"+flag) {
			t.Errorf("bad --%s: %v, want a usage error naming the flag", name, err)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bad --%s left %s behind (%v)", name, out, err)
		}
	}
}
