package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestEvalSplits: a run's eval.jsonl (log-eval) becomes charts of points,
// the split's reward first, and the summary names the best step by the
// run's --best-metric, as hone-train picks it (first on ties; min mode).
func TestEvalSplits(t *testing.T) {
	metrics, err := ReadMetrics(strings.NewReader(`{"step":1,"loss":1}
{"step":2,"loss":0.5}
{"step":3,"loss":0.25}
{"step":4,"loss":0.2}
`), "metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	splits, err := ReadMetrics(strings.NewReader(`{"step":0,"val/reward":0.1,"val/found":0.2}
{"step":2,"val/reward":0.6,"val/found":0.5,"test/reward":0.4}
{"step":3,"val/reward":0.6,"val/found":0.7}
`), "eval.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode, want string
	}{
		{"max", "2 (val/reward 0.6)"},
		{"min", "0 (val/reward 0.1)"},
	} {
		cfg, err := FlattenConfig([]byte(`{"run":"rl","best_metric":"val/reward","best_mode":"`+c.mode+`"}`), "train_config.json")
		if err != nil {
			t.Fatal(err)
		}
		pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "rl", Metrics: metrics, Config: cfg, Splits: splits}}})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, row := range pg.Summary.Rows {
			if row[0] == "best step by --best-metric val/reward ("+c.mode+")" {
				got = row[1]
			}
		}
		if got != c.want {
			t.Errorf("%s: summary best %q, want %q\n%v", c.mode, got, c.want, pg.Summary.Rows)
		}
		if c.mode != "max" {
			continue
		}
		var ids []string
		for _, s := range pg.Sections {
			if s.ID == "splits" {
				for _, ch := range s.Charts {
					ids = append(ids, ch.ID)
				}
			}
		}
		if strings.Join(ids, " ") != "split-test_reward split-val_reward split-val_found" {
			t.Fatalf("split charts %v", ids)
		}
		l := pg.Chart("split-val_reward").Lines[0]
		if !l.Points || len(l.X) != 3 || l.X[1] != 2 || l.Y[2] != 0.6 {
			t.Errorf("val/reward line %+v", l)
		}
		var b bytes.Buffer
		if err := pg.WriteHTML(&b); err != nil || !strings.Contains(b.String(), `id="chart-split-val_reward"`) {
			t.Errorf("page: %v", err)
		}
	}
	// A best metric no step has logged yet says so.
	cfg, _ := FlattenConfig([]byte(`{"best_metric":"val/accuracy"}`), "train_config.json")
	pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "rl", Metrics: metrics, Config: cfg}}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range pg.Summary.Rows {
		if row[0] == "best step by --best-metric val/accuracy (max)" && row[1] == "not logged yet" {
			found = true
		}
	}
	if !found {
		t.Errorf("summary %v", pg.Summary.Rows)
	}
}

// With the run's saved steps known, an eval of step 0 (the starting point,
// which has no step folder) is never the best step, as hone-train's best
// pointer never names it; a metric logged only there says so.
func TestBestMetricSavedSteps(t *testing.T) {
	metrics, err := ReadMetrics(strings.NewReader("{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":0.5}\n"), "metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ evals, want string }{
		{"{\"step\":0,\"val/reward\":0.9}\n{\"step\":2,\"val/reward\":0.6}\n", "2 (val/reward 0.6)"},
		{"{\"step\":0,\"val/reward\":0.9}\n", "not logged at a saved step yet"},
	} {
		splits, err := ReadMetrics(strings.NewReader(c.evals), "eval.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := FlattenConfig([]byte(`{"best_metric":"val/reward"}`), "train_config.json")
		pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "rl", Metrics: metrics, Config: cfg, Splits: splits, Saved: []float64{1, 2}}}})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, row := range pg.Summary.Rows {
			if row[0] == "best step by --best-metric val/reward (max)" {
				got = row[1]
			}
		}
		if got != c.want {
			t.Errorf("evals %q: best %q, want %q", c.evals, got, c.want)
		}
	}
}
