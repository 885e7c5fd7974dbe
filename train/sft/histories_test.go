package sft

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/spf13/pflag"
)

// TestAdditionalHistoriesTrainAsTheirOwnSequences: SFT lays out a
// trajectory's main history and then each additional history alone, with
// the --turns rule applied per history, as GRPO does; a step's token mean
// (trainable_tokens in the metrics) covers every history, a history
// without an assistant turn adds nothing, and a trajectory whose only
// assistant turns are in an additional history is trained, not skipped.
func TestAdditionalHistoriesTrainAsTheirOwnSequences(t *testing.T) {
	dir, md, _ := setup(t)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	user := func(s string) trajectory.Message { return trajectory.Message{Role: "user", Content: s} }
	asst := func(s string) trajectory.Message { return trajectory.Message{Role: "assistant", Content: s} }
	main := []trajectory.Message{user("q0"), asst("a0"), user("again"), asst("b5!")}
	summary := trajectory.History{Messages: []trajectory.Message{{Role: "system", Content: "summarise"}, user("so far"), asst("said a0"), user("more"), asst("then b5!")}}
	contextOnly := trajectory.History{Messages: []trajectory.Message{user("hello")}}
	trajs := []trajectory.Trajectory{
		{ID: "t0", Messages: main, AdditionalHistories: []trajectory.History{summary, contextOnly}, Reward: trajectory.Float64(1),
			Metrics: map[string]float64{"solved": 1}},
		// The main history has no assistant turn: the history carries it.
		{ID: "t1", Messages: main[:1], AdditionalHistories: []trajectory.History{summary}, Reward: trajectory.Float64(1)},
		// Nothing to imitate anywhere: skipped.
		{ID: "t2", Messages: main[:1], AdditionalHistories: []trajectory.History{contextOnly}, Reward: trajectory.Float64(1)},
	}
	in := filepath.Join(dir, "h.parquet")
	if err := trajectory.WriteFile(context.Background(), in, []trajectory.Group{{ID: "g", Trajectories: trajs}}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	lay := func(msgs []trajectory.Message, trainable ...int) []layout.Sequence {
		msgs = slices.Clone(msgs)
		for _, i := range trainable {
			msgs[i].Trainable = true
		}
		l, err := text.Layout(context.Background(), msgs, nil, layout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Sequences
	}
	for _, tc := range []struct {
		turns string
		want  [][]layout.Sequence
	}{
		{"all", [][]layout.Sequence{
			append(lay(main, 1, 3), lay(summary.Messages, 2, 4)...),
			append(lay(main[:1]), lay(summary.Messages, 2, 4)...),
		}},
		{"last", [][]layout.Sequence{
			append(lay(main, 3), lay(summary.Messages, 4)...),
			append(lay(main[:1]), lay(summary.Messages, 4)...),
		}},
	} {
		d, err := Load(context.Background(), text, fileset.Files(in), tc.turns, nil, layout.Options{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Examples) != 2 || d.Skipped != 1 {
			t.Fatalf("--turns %s: %d examples, %d skipped; want 2 and 1", tc.turns, len(d.Examples), d.Skipped)
		}
		for i, w := range tc.want {
			if got := d.Examples[i].Seqs; !sameSequences(got, w) {
				t.Errorf("--turns %s, trajectory %d: %d sequences, want %d (main history, then each history with an assistant turn alone)", tc.turns, i, len(got), len(w))
			}
		}
		if !reflect.DeepEqual(d.EnvMetrics, []string{"solved"}) || !d.Complete {
			t.Errorf("environment metrics %v (complete %v), want [solved] from a Parquet file", d.EnvMetrics, d.Complete)
		}
	}

	// One step on both: its trainable tokens are those of every history.
	d, err := Load(context.Background(), text, fileset.Files(in), "all", nil, layout.Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ex := range d.Examples {
		want += ex.Trainable()
	}
	if mainOnly := lay(main, 1, 3); want <= trainableOf(mainOnly) {
		t.Fatalf("fixture: %d trainable tokens over all histories, not more than the main history's %d", want, trainableOf(mainOnly))
	}
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	o.Model, o.Out, o.Name, o.Inputs = md, dir, "hist", fileset.Files(in)
	o.Steps, o.BatchSize = 1, 0
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
	rows := readRows(t, filepath.Join(dir, "hist"))
	if len(rows) != 1 || rows[0]["trainable_tokens"] != float64(want) || rows[0]["conversations"] != 2 {
		t.Errorf("metrics %v: want trainable_tokens %d over 2 conversations", rows, want)
	}
	// --best-metric is checked against these names: every one the row has
	// must be among them.
	for k := range rows[0] {
		if !slices.Contains(metricNames(), k) {
			t.Errorf("metrics row has %q, which metricNames does not list", k)
		}
	}
}

func trainableOf(seqs []layout.Sequence) int {
	n := 0
	for _, s := range seqs {
		for _, tr := range s.Trainable[1:] {
			if tr {
				n++
			}
		}
	}
	return n
}

func sameSequences(a, b []layout.Sequence) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].IDs, b[i].IDs) || !reflect.DeepEqual(a[i].Trainable, b[i].Trainable) {
			return false
		}
	}
	return true
}

// readRows reads a run folder's metrics.jsonl.
func readRows(t *testing.T, run string) []map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]float64
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r map[string]float64
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}
