package trajectory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// A null metric in a JSONL line, of the trajectory or of its group (a
// Python script's None, "does not apply"), is left out of the row, as
// hone-collect's stdio environment and proxy leave it out; the import
// refused the whole file with "metric \"overlap\" is null". The result
// words one warning for the file, naming its first such line.
func TestImportJSONLNullMetricLeftOut(t *testing.T) {
	in := `{"trajectory_id":"a","group_id":"g","messages":[],"metrics":{"turns":2}}` + "\n" +
		`{"trajectory_id":"b","group_id":"g","messages":[],"metrics":{"turns":3,"overlap":null},"group_metrics":{"spread":null,"hard":1}}` + "\n" +
		`{"trajectory_id":"c","group_id":"g","messages":[],"metrics":{"overlap":null}}` + "\n"
	gs, res, err := trajectory.ImportJSONL(context.Background(), strings.NewReader(in), "in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || len(gs[0].Trajectories) != 3 {
		t.Fatalf("groups %+v; want g of three trajectories", gs)
	}
	b, c := gs[0].Trajectories[1], gs[0].Trajectories[2]
	if len(b.Metrics) != 1 || b.Metrics["turns"] != 3 || len(c.Metrics) != 0 {
		t.Errorf("metrics of b %v, of c %v; want turns 3 alone, and none", b.Metrics, c.Metrics)
	}
	if m := gs[0].Metrics; len(m) != 1 || m["hard"] != 1 {
		t.Errorf("group metrics %v; want hard 1 alone", m)
	}
	w := res.NullMetricsWarning("in.jsonl")
	for _, want := range []string{"in.jsonl:2", `metric "overlap" is null`, `group metric "spread"`, "left out", "3 null metrics"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q; want it to say %q", w, want)
		}
	}
	if strings.Contains(w, "\n") {
		t.Errorf("warning %q; want one line", w)
	}
	if _, res, err := trajectory.ImportJSONL(context.Background(), strings.NewReader(`{"messages":[],"metrics":{"x":1}}`), "ok.jsonl"); err != nil || res.NullMetricsWarning("ok.jsonl") != "" {
		t.Errorf("file without a null metric: err %v, warning %q; want none", err, res.NullMetricsWarning("ok.jsonl"))
	}
}

// A file with one null metric is warned of in the singular, without a
// count of "1 null metrics, all left out" that lists it again.
func TestImportJSONLOneNullMetric(t *testing.T) {
	_, res, err := trajectory.ImportJSONL(context.Background(), strings.NewReader(`{"messages":[],"metrics":{"overlap":null}}`+"\n"), "one.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	w := res.NullMetricsWarning("one.jsonl")
	if !strings.Contains(w, `one.jsonl:1: metric "overlap" is null: left out of the row`) || strings.Contains(w, "1 null metrics") || strings.Contains(w, "all left out") {
		t.Errorf("warning %q; want one.jsonl:1 naming overlap, in the singular", w)
	}
}
