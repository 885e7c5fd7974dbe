package sft

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/tinymodel"
	"github.com/hone-rl/hone/train/trainer"
	"github.com/spf13/pflag"
)

func setup(t *testing.T) (dir, modelDir, data string) {
	t.Helper()
	dir = t.TempDir()
	modelDir = filepath.Join(dir, "model")
	if err := tinymodel.Write(context.Background(), modelDir, tinymodel.Options{Family: "llama", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 1, InitStd: 0.2}, ref.New()); err != nil {
		t.Fatal(err)
	}
	// Two-turn chats: the answers are a fixed function of the question.
	var b bytes.Buffer
	for i := range 6 {
		line := map[string]any{"messages": []map[string]string{
			{"role": "user", "content": fmt.Sprintf("q%d", i)},
			{"role": "assistant", "content": fmt.Sprintf("a%d", i)},
			{"role": "user", "content": "again"},
			{"role": "assistant", "content": fmt.Sprintf("b%d!", 5-i)},
		}}
		js, _ := json.Marshal(line)
		b.Write(append(js, '\n'))
	}
	data = filepath.Join(dir, "chats.jsonl")
	if err := os.WriteFile(data, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, modelDir, data
}

func TestTurnsAllOrLast(t *testing.T) {
	_, md, data := setup(t)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	allData, err := Load(context.Background(), text, fileset.Files(data), "all", nil, layout.Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lastData, err := Load(context.Background(), text, fileset.Files(data), "last", nil, layout.Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, last := allData.Examples, lastData.Examples
	// "a0" + <|im_end|> = 3 tokens, "b5!" + <|im_end|> = 4 tokens.
	if len(all) != 6 || all[0].Trainable() != 7 || last[0].Trainable() != 4 {
		t.Errorf("trainable tokens: all %d, last %d over %d chats; want 7 and 4", all[0].Trainable(), last[0].Trainable(), len(all))
	}
}

func TestSFTLossDrops(t *testing.T) {
	dir, md, data := setup(t)
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	o.Model, o.Out, o.Name, o.Inputs = md, dir, "sft", fileset.Files(data)
	o.LR, o.Rank, o.Alpha, o.Steps, o.BatchSize, o.WeightDecay, o.MaxGradNorm = 3e-2, 8, 16, 30, 0, 0, 1
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var log bytes.Buffer
	o.Backend, o.Log = be, textLog(&log)
	if err := Run(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	f, err := os.ReadFile(filepath.Join(dir, "sft", runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	sc := bufio.NewScanner(bytes.NewReader(f))
	for sc.Scan() {
		var r map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, r["loss"])
	}
	if len(losses) != 30 || !(losses[29] < 0.5*losses[0]) {
		t.Fatalf("loss %v → %v over %d steps; want it halved", losses[0], losses[len(losses)-1], len(losses))
	}
	t.Logf("SFT loss %.3f → %.3f in 30 steps", losses[0], losses[29])

	// The SFT adapter seeds another run (what GRPO's --init-adapter does).
	var o2 trainer.Options = o.Options
	o2.Name, o2.InitAdapter = "next", filepath.Join(dir, "sft", runfolder.StepName(30))
	base, err := trainer.LoadBase(be, &o2)
	if err != nil {
		t.Fatal(err)
	}
	env, err := trainer.Setup(context.Background(), base, &o2, o2, trainer.Fresh, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	got := env.Ad.ToPEFT("x")
	want, _, _, err := trainer.Restore(&checkpoint.Run{Dir: filepath.Join(dir, "sft")}, 30, env.Model, o.AdamWParams(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for l, mods := range want.ToPEFT("x").Tensors {
		for name, p := range mods {
			if !equal(got.Tensors[l][name].B, p.B) {
				t.Errorf("layer %d %s differs after --init-adapter", l, name)
			}
		}
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestHugeLRStopsBeforeSaving: --lr 1e30 without clipping stops the run
// at the first step whose loss, gradient or weights are not finite, with
// that step unsaved and latest naming the step before.
func TestHugeLRStopsBeforeSaving(t *testing.T) {
	dir, md, data := setup(t)
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	o.Model, o.Out, o.Name, o.Inputs = md, dir, "nan", fileset.Files(data)
	o.LR, o.MaxGradNorm, o.Rank, o.Steps, o.BatchSize = 1e30, 0, 4, 6, 2
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var log bytes.Buffer
	o.Backend, o.Log = be, textLog(&log)
	err = Run(context.Background(), o)
	if !errors.Is(err, trainer.ErrNotFinite) {
		t.Fatalf("run: %v, want a non-finite error\n%s", err, log.String())
	}
	var bad int
	if _, serr := fmt.Sscanf(err.Error(), "step %d: the ", &bad); serr != nil || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("error %q does not name the step", err)
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "nan")}
	if _, err := os.Stat(run.StepDir(bad)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed step's folder exists (%v)", err)
	}
	if last, ok, err := run.Latest(); err != nil || ok != (bad > 1) || last != bad-1 {
		t.Errorf("latest %d %v %v, want step %d", last, ok, err, bad-1)
	}
	// With a saved step the advice says how to change --lr: a resume
	// keeps it.
	if bad > 1 && !strings.Contains(err.Error(), "--init-adapter "+run.StepDir(bad-1)) {
		t.Errorf("error %q does not say how to go on from step %d with other options", err, bad-1)
	}
}

// textLog logs as hone-train does (slog text lines) into w.
func textLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestBadConversationNamesItsFile: a conversation that cannot be laid out
// is bad input naming the file it is in (and its group and trajectory), so
// that among several inputs the user knows which to fix.
func TestBadConversationNamesItsFile(t *testing.T) {
	dir, md, good := setup(t)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	line := `{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "token_ids": [5, -1]}]}` + "\n"
	if err := os.WriteFile(bad, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(context.Background(), text, fileset.Files(good, bad), "all", nil, layout.Options{}, nil, nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v, want bad input naming %s", err, bad)
	}
}

// warmRun returns a function that runs sft run "warm" of model md on data
// into dir for steps steps, resuming or not, on a one-worker CPU backend.
func warmRun(t *testing.T, dir, md, data string) func(steps int, resume bool) error {
	t.Helper()
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return func(steps int, resume bool) error {
		var o Options
		o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
		o.Model, o.Out, o.Name, o.Inputs = md, dir, "warm", fileset.Files(data)
		o.Rank, o.Steps, o.BatchSize, o.Resume, o.Backend = 4, steps, 2, resume, be
		return Run(context.Background(), o)
	}
}

// TestResumeRefusesChangedInputs: the run keeps its inputs' sha256, so a
// resume whose files have the run's names but other contents (data
// regenerated under the same name) is refused as a changed option, naming
// inputs_sha256, before anything is trained; with the same contents it
// continues.
func TestResumeRefusesChangedInputs(t *testing.T) {
	dir, md, data := setup(t)
	run := warmRun(t, dir, md, data)
	if err := run(1, false); err != nil {
		t.Fatal(err)
	}
	if err := run(2, true); err != nil {
		t.Fatalf("resume on the same files: %v", err)
	}
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, append(b, b...), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(3, true)
	if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), `option "inputs_sha256" differs`) {
		t.Fatalf("resume on changed contents: %v, want a usage error naming inputs_sha256", err)
	}
	if last, _, _ := (&checkpoint.Run{Dir: filepath.Join(dir, "warm")}).Latest(); last != 2 {
		t.Errorf("latest step %d after the refused resume, want 2", last)
	}
}

// TestBadInitAdapterLeavesNoFolder: a fresh run whose --init-adapter
// cannot be read is bad input, and leaves no run folder (a lock file in an
// empty folder) behind.
func TestBadInitAdapterLeavesNoFolder(t *testing.T) {
	dir, md, data := setup(t)
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	o.Model, o.Out, o.Name, o.Inputs = md, dir, "warm", fileset.Files(data)
	o.Steps, o.Backend, o.InitAdapter = 1, be, filepath.Join(dir, "no-such-adapter")
	err = Run(context.Background(), o)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "--init-adapter") {
		t.Fatalf("run: %v, want bad input naming --init-adapter", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "warm")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run folder exists after the refused run (%v)", err)
	}
}

// TestIsChatFile: JSON Lines inputs are told by the ending of the name, of
// a URL's path without its query (an object store's endpoint settings).
func TestIsChatFile(t *testing.T) {
	for name, want := range map[string]bool{
		"chats.jsonl": true, "dir/c.json": true, "a.parquet": false,
		"s3://b/chats.jsonl?endpoint=http://127.0.0.1:9000&region=x": true,
		"s3://b/round.parquet?region=eu.jsonl":                       false,
	} {
		if got := isChatFile(name); got != want {
			t.Errorf("isChatFile(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestChatsFromStdin: stdin ("-") and a pipe (bash's <(…)) have no name
// that tells JSON Lines from Parquet, so their content does, as every
// stage's inputs may be "-": `hone-inspect to-jsonl … | hone-train sft … -`
// trains on the chats. A .parquet name stays Parquet whatever it holds.
func TestChatsFromStdin(t *testing.T) {
	_, md, data := setup(t)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	chats, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"-", "/dev/fd/63"} {
		d, err := Load(context.Background(), text, fileset.Held([]string{name}, [][]byte{chats}), "all", nil, layout.Options{}, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(d.Examples) != 6 || d.Complete {
			t.Errorf("%s: %d examples (complete %v), want the 6 chats read as JSON Lines", name, len(d.Examples), d.Complete)
		}
	}
	if _, err := Load(context.Background(), text, fileset.Held([]string{"c.parquet"}, [][]byte{chats}), "all", nil, layout.Options{}, nil, nil); err == nil || !strings.Contains(err.Error(), "c.parquet") {
		t.Errorf("chats named c.parquet: %v, want an error naming the file as not Parquet", err)
	}
}

// TestRollbackDropsLaterSteps: a run rolled back by hand (latest moved to
// step 1 of 3) and resumed for one more step ends at step 2 with no step 3:
// the old step 3, of the undone line of training, was kept beside the new
// steps, served as warm@3 and counted by --keep-last.
func TestRollbackDropsLaterSteps(t *testing.T) {
	dir, md, data := setup(t)
	run := warmRun(t, dir, md, data)
	if err := run(3, false); err != nil {
		t.Fatal(err)
	}
	r := &checkpoint.Run{Dir: filepath.Join(dir, "warm")}
	if err := runfolder.WritePointer(r.Dir, runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	if err := run(2, true); err != nil {
		t.Fatal(err)
	}
	steps, err := r.Steps()
	if err != nil || fmt.Sprint(steps) != "[1 2]" {
		t.Errorf("steps after the rollback to 1 and a resume to 2: %v %v, want [1 2]", steps, err)
	}
}
