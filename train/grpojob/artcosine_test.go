package grpojob

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
)

// horizonLine is the log line of a --norm art cosine run's counted horizon.
var horizonLine = regexp.MustCompile(`cosine horizon: (\d+) updates, counted from the input`)

// loggedHorizon is the horizon the log text names, -1 when it names none.
func loggedHorizon(t *testing.T, text string) int {
	t.Helper()
	m := horizonLine.FindAllStringSubmatch(text, -1)
	if len(m) != 1 {
		t.Errorf("%d cosine horizon lines, want 1:\n%s", len(m), text)
		return -1
	}
	n, err := strconv.Atoi(m[0][1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestARTCosineCountsUpdatesAhead runs --norm art --lr-schedule cosine on
// files without --schedule-steps: the run counts its optimizer updates
// before it trains and takes them as the horizon. The count equals the
// updates the run then takes (its metrics' "updates", its summary's
// optimizer_updates), with steps that have nothing to train (a group of
// equal rewards) and several packed rows per step; each step's learning
// rate is the cosine over that count; and a run stopped after its first
// step and resumed counts the same horizon and ends bit-identical to the
// uninterrupted one. Before, the run was refused until the user measured
// the updates in another run and gave --schedule-steps.
func TestARTCosineCountsUpdatesAhead(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "a.parquet")
	writeGroups(t, md, in, 4, 4, func(g, i int) float64 {
		if g == 1 {
			return 1 // equal rewards: its steps take no update
		}
		return varied(g, i)
	})
	opts := func(run string) Options {
		o := baseOptions(md, filepath.Join(dir, "adapters"), run, in)
		o.Loss.Norm, o.PackedSeqLen, o.GroupsPerStep, o.Steps = "art", 24, 1, 6
		o.LR, o.MinLR, o.Schedule, o.Warmup = 1e-2, 1e-3, "cosine", 1
		return o
	}
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), opts("ref"), textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	horizon := loggedHorizon(t, log.String())
	rows := readMetrics(t, filepath.Join(dir, "adapters", "ref"))
	if len(rows) != 6 {
		t.Fatalf("%d metrics rows, want 6", len(rows))
	}
	sched := trainer.Schedule{Kind: "cosine", LR: 1e-2, Warmup: 1, Total: horizon, MinLR: 1e-3}
	updates, skipped, most := 0, 0, 0
	for _, r := range rows {
		u := int(r["updates"])
		if u == 0 {
			skipped++
			continue
		}
		var want float64
		for k := updates; k < updates+u; k++ {
			want += sched.At(k) / float64(u)
		}
		if math.Abs(r["lr"]-want) > 1e-12 {
			t.Errorf("step %v: lr %v, want %v (its %d updates' mean on a cosine over %d)", r["step"], r["lr"], want, u, horizon)
		}
		updates += u
		most = max(most, u)
	}
	if updates != horizon {
		t.Errorf("the run took %d optimizer updates, its counted horizon is %d", updates, horizon)
	}
	if !strings.Contains(log.String(), "optimizer_updates="+strconv.Itoa(horizon)+" ") {
		t.Errorf("the summary does not say optimizer_updates=%d:\n%s", horizon, log.String())
	}
	if skipped == 0 || most < 2 {
		t.Fatalf("for this test to tell, the run needs a step with nothing to train (%d) and one of several rows (most %d)", skipped, most)
	}

	// Stopped after step 1 and resumed: the resumed call counts the same
	// horizon, the restored updates plus those ahead.
	log.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := slog.New(cancelAfterStep{Handler: slog.NewTextHandler(&log, nil), cancel: cancel})
	if err := runWith(ctx, backend(t), opts("stopped"), stop); !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped run: %v, want context.Canceled\n%s", err, log.String())
	}
	run := &checkpoint.Run{Dir: filepath.Join(dir, "adapters", "stopped")}
	if last, ok, err := run.Latest(); err != nil || !ok || last != 1 {
		t.Fatalf("after the stop latest is %d (%v, %v), want step 1\n%s", last, ok, err, log.String())
	}
	log.Reset()
	o := opts("stopped")
	o.Resume = true
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("resume: %v\n%s", err, log.String())
	}
	if got := loggedHorizon(t, log.String()); got != horizon {
		t.Errorf("the resumed run's horizon is %d, the uninterrupted run's %d", got, horizon)
	}
	for _, f := range []string{"adapter_model.safetensors", checkpoint.OptimizerName} {
		a, err := os.ReadFile(filepath.Join(dir, "adapters", "ref", runfolder.StepName(6), f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(run.StepDir(6), f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the uninterrupted and the stopped-and-resumed run", f)
		}
	}
}
