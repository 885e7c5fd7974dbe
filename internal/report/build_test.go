package report

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestBuildTwoRunsOverlaid(t *testing.T) {
	in, _ := fixtureInput(t, t.TempDir())
	pg, err := Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"reward_mean", "loss", "entropy", "grad_norm", "traj-reward", "component-env", "component-length", "traj-length", "env-found"} {
		c := pg.Chart(id)
		if c == nil {
			t.Errorf("no chart %s", id)
			continue
		}
		var runs []int
		var names []string
		for _, l := range c.Lines {
			runs, names = append(runs, l.Run), append(names, l.Name)
		}
		if !slices.Equal(runs, []int{0, 1}) || !slices.Equal(names, []string{"a", "b"}) {
			t.Errorf("chart %s: lines of runs %v named %q, want one per run a, b", id, runs, names)
		}
	}
	if c := pg.Chart("reward_mean"); len(c.Lines[1].Lo) != 16 || math.Abs(c.Lines[1].Hi[0]-c.Lines[1].Lo[0]-2*0.29) > 1e-12 {
		t.Errorf("reward band %v..%v", c.Lines[1].Lo, c.Lines[1].Hi)
	}
	// Training time and tokens accumulate over steps, per run.
	a := pg.axes[0]
	if a.Name != "a" || a.Time[0] != 1.5 || a.Time[15] != 24 || a.Tokens[0] != 1010 || a.Tokens[1] != 2030 {
		t.Errorf("run a axes %+v", a)
	}
	// Evals: one line per label, placed on the axes of the run they name.
	e := pg.Chart("eval-success")
	if e == nil || !e.ByLine || len(e.Lines) != 3 || e.Lines[0].Name != "rl T=1" || e.Lines[2].Name != "base" || e.Lines[2].Run != 1 {
		t.Fatalf("eval chart %+v", e)
	}
	if pg.Chart("eval-temperature") != nil || pg.Chart("eval-episodes") != nil {
		t.Error("an eval setting was plotted")
	}
	if got := pg.Summary.Head; !slices.Equal(got, []string{"", "a", "b"}) {
		t.Errorf("summary head %q", got)
	}
}

// KL that is 0 throughout (beta 0), a constant learning rate, and counts
// that never change are folded into one line each instead of a chart.
func TestFlatSeriesFolded(t *testing.T) {
	in, _ := fixtureInput(t, t.TempDir())
	pg, err := Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]string{
		"kl":            {"a: 0", "b: 0"},
		"lr":            {"a: 0.001", "b: 0.002"},
		"groups":        {"a: 3", "b: 3"},
		"traj-episodes": {"a: 12", "b: 12"},
		"traj-errors":   {"a: 1", "b: 1"},
		"env-turns":     {"a: 2", "b: 2"},
	} {
		f := pg.FoldedChart(id)
		if f == nil || !slices.Equal(f.Values, want) {
			t.Errorf("folded %s = %+v, want values %q", id, f, want)
		}
		if pg.Chart(id) != nil {
			t.Errorf("flat %s is also drawn", id)
		}
	}
	if pg.FoldedChart("loss") != nil || pg.Chart("loss") == nil {
		t.Error("loss, which moves, was folded")
	}
	var page bytes.Buffer
	if err := pg.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`flat series folded away: KL to reference, Learning rate</summary>`, `<tr id="folded-lr"><th>Learning rate</th><td>a: 0.001; b: 0.002</td></tr>`} {
		if !strings.Contains(page.String(), frag) {
			t.Errorf("page lacks %q", frag)
		}
	}

	// One run, one value: the bare value. A single point is all there is
	// to see, so it is drawn.
	m, err := ReadMetrics(strings.NewReader("{\"step\":1,\"lr\":2e-5,\"kl\":0}\n{\"step\":2,\"lr\":2e-5,\"kl\":0.5}\n"), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	one, err := ReadMetrics(strings.NewReader(`{"step":1,"lr":2e-5}`), "one.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m      *Metrics
		folded bool
	}{{m, true}, {one, false}} {
		pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "r", Metrics: tc.m}}})
		if err != nil {
			t.Fatal(err)
		}
		if f := pg.FoldedChart("lr"); (f != nil) != tc.folded || (f != nil && !slices.Equal(f.Values, []string{"2e-05"})) {
			t.Errorf("%s: folded lr %+v, want folded=%v", tc.m.File, f, tc.folded)
		}
	}
}

func TestHyperparameters(t *testing.T) {
	params, err := FlattenConfig([]byte(`{"model":"m","targets":["q","v"],"loss":{"beta":0,"clip":{"lo":0.2}},"lr":1e-5,"ok":true,"none":null}`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{{"model", "m"}, {"targets", `["q","v"]`}, {"loss.beta", "0"}, {"loss.clip.lo", "0.2"}, {"lr", "1e-5"}, {"ok", "true"}, {"none", "null"}}
	if !slices.Equal(params, want) {
		t.Fatalf("params\n got %v\nwant %v", params, want)
	}
	for _, tc := range []struct{ text, want string }{
		{`[1]`, "c.json: not a JSON object"},
		{`{"a":1} {}`, "c.json: trailing data"},
		{`{"a":`, "c.json: unexpected EOF"},
	} {
		if _, err := FlattenConfig([]byte(tc.text), "c.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.text, err, tc.want)
		}
	}

	in, _ := fixtureInput(t, t.TempDir())
	pg, err := Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var diff []string
	for i, d := range pg.Params.Diff {
		if d {
			diff = append(diff, pg.Params.Rows[i][0])
		}
	}
	if !slices.Equal(diff, []string{"run", "lr"}) || !slices.Equal(pg.Params.Head, []string{"parameter", "a (step 16)", "b (step 16)"}) {
		t.Fatalf("params differing %q, head %q", diff, pg.Params.Head)
	}
	var page bytes.Buffer
	if err := pg.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`<section id="hyperparameters">`, "2 differ (marked): run, lr", `<tr class="diff"><th>lr</th><td>0.001</td><td>0.002</td></tr>`, `<tr><th>loss.beta</th><td>0</td><td>0</td></tr>`} {
		if !strings.Contains(page.String(), frag) {
			t.Errorf("page lacks %q", frag)
		}
	}
	// One run: a compact list of key and value.
	pg, err = Build(context.Background(), Input{Runs: in.Runs[:1]})
	if err != nil {
		t.Fatal(err)
	}
	page.Reset()
	if err := pg.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<div><dt>loss.epsilon</dt><dd>0.2</dd></div>`) {
		t.Error("single-run page lacks its hyperparameters")
	}
	// No train_config.json: no section.
	in.Runs[0].Config = nil
	if pg, err := Build(context.Background(), Input{Runs: in.Runs[:1]}); err != nil || pg.Params != nil {
		t.Errorf("params without a config: %+v, %v", pg.Params, err)
	}
}

// The page is one file: the script and its data inline, nothing to fetch.
func TestPageSelfContained(t *testing.T) {
	in, _ := fixtureInput(t, t.TempDir())
	pg, err := Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pg.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:|//)`), regexp.MustCompile(`(?i)<link\b`), regexp.MustCompile(`(?i)url\(`),
		regexp.MustCompile(`@import`), regexp.MustCompile(`\bfetch\(|XMLHttpRequest|import\(`),
	} {
		if m := bad.FindString(page); m != "" {
			t.Errorf("page reaches out: %q", m)
		}
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="hone-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data in the page")
	}
	var data struct {
		Runs   []runAxes `json:"runs"`
		Charts []Chart   `json:"charts"`
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("page data: %v", err)
	}
	figs := regexp.MustCompile(`<figure class="chart" id="chart-([^"]+)" data-i="(\d+)">`).FindAllStringSubmatch(page, -1)
	if len(figs) != len(data.Charts) || len(figs) < 10 {
		t.Fatalf("%d figures for %d charts", len(figs), len(data.Charts))
	}
	for i, f := range figs {
		if c := data.Charts[i]; c.ID != html.UnescapeString(f[1]) || f[2] != strings.TrimSpace(f[2]) || len(c.Lines) == 0 {
			t.Errorf("figure %d is %s, data has %s", i, f[1], c.ID)
		}
	}
	if len(data.Runs) != 2 || data.Runs[1].Color != palette[1] {
		t.Errorf("runs %+v", data.Runs)
	}
}

func TestBuildRefusesBadRuns(t *testing.T) {
	m := grpoMetrics(t, "a", 2, 1e-3)
	for _, tc := range []struct {
		runs []RunInput
		want string
	}{
		{nil, "no runs"},
		{[]RunInput{{Name: "a"}}, `run "a" has no metrics`},
		{[]RunInput{{Name: "a", Metrics: m}, {Name: "a", Metrics: m}}, `two runs are called "a"`},
	} {
		if _, err := Build(context.Background(), Input{Runs: tc.runs}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want %q", err, tc.want)
		}
	}
}

// Chart data that JSON cannot hold (here a token axis holding +Inf, which
// Build itself now refuses: TestSumOverflowNamed) is an error, not a page
// whose charts are all blank: html/template wrote it as
// "/* json: unsupported value: +Inf */null" and WriteHTML returned nil.
func TestWriteHTMLRefusesUnencodableData(t *testing.T) {
	pg := &Page{Runs: []Summary{{Run: "r"}}, axes: []runAxes{{Name: "r", Steps: []float64{1}, Tokens: []float64{math.Inf(1)}}}}
	var b bytes.Buffer
	err := pg.WriteHTML(&b)
	if err == nil || !strings.Contains(err.Error(), "chart data") {
		t.Fatalf("err %v; page data %.120q", err, b.String()[max(strings.Index(b.String(), `id="hone-data"`), 0):])
	}
}
