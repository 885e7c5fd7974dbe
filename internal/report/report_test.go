package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// synthRow is one metrics row as hone-train writes it.
type synthRow map[string]any

// synthMetrics returns n seeded rows with every key the trainer writes, and
// the rows themselves so the test can compute the expected summary.
func synthMetrics(n int, seed uint64) ([]synthRow, string) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var rows []synthRow
	var b strings.Builder
	for i := 1; i <= n; i++ {
		r := synthRow{
			"step": i, "loss": 2 / float64(i), "policy_loss": -0.1 * rng.Float64(), "kl": 0.01 * float64(i),
			"entropy": 3 - 0.01*float64(i), "clip_frac": 0.2 * rng.Float64(), "ratio_mean": 1 + 0.01*rng.NormFloat64(),
			"grad_norm": rng.Float64(), "lr": 1e-5 * math.Min(1, float64(i)/3),
			"reward_mean": math.Sin(float64(i)/3) + 0.1*rng.Float64(), "reward_std": 0.2 * rng.Float64(),
			"groups": 4, "groups_trainable": 3, "tokens": 1000 + rng.IntN(500), "trainable_tokens": 300 + rng.IntN(100),
			"tokens_per_s": 500 * rng.Float64(), "seconds": 1 + rng.Float64(),
			"run": "r1", "note": nil, "nested": map[string]any{"x": 1}, "ok": true,
		}
		rows = append(rows, r)
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	return rows, b.String()
}

func f64(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("not a number: %T", v))
}

const evalJSONL = `{"label":"base","step":0,"accuracy":0.30,"mean_reward":0.1}
{"label":"after-grpo","step":12,"accuracy":0.55,"mean_reward":0.4}
{"label":"after-grpo","step":6,"accuracy":0.45,"mean_reward":0.3,"model":"x"}
`

// The wall-time axis runs from the start of the first step (its "time"
// less its "seconds") to the end of each step; a run with a row lacking
// "time" has none.
func TestWallAxisHandChecked(t *testing.T) {
	text := `{"step":1,"seconds":2,"time":1000}
{"step":2,"seconds":3,"time":1010.5}
{"step":4,"seconds":1,"time":1100}
`
	m, err := ReadMetrics(strings.NewReader(text), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wallAxis(m), []float64{2, 12.5, 102}; !slices.Equal(got, want) {
		t.Errorf("wall axis %v, want %v", got, want)
	}
	s := Summarize("r", m)
	if !s.HasWall || s.WallSpan != 102 {
		t.Errorf("summary wall %v %v, want 102", s.HasWall, s.WallSpan)
	}
	if rows := fmt.Sprint(s.rows()); !strings.Contains(rows, "wall time (first step to last) 1m42s") {
		t.Errorf("summary rows %s lack the wall time", rows)
	}
	pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "r", Metrics: m}}})
	if err != nil {
		t.Fatal(err)
	}
	if pg.Chart("time") != nil || pg.FoldedChart("time") != nil {
		t.Error(`"time" drawn as a chart; it is the wall-time axis`)
	}
	m, err = ReadMetrics(strings.NewReader(text+`{"step":5,"seconds":1}`+"\n"), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if w := wallAxis(m); w != nil {
		t.Errorf("a row without time: wall axis %v, want none", w)
	}
}

func TestSummaryHandChecked(t *testing.T) {
	text := `{"step":3,"reward_mean":0.5,"tokens":100,"seconds":1.5}
{"step":4,"reward_mean":0.9,"tokens":200,"seconds":2}
{"step":5,"reward_mean":0.9,"tokens":50}
{"step":7,"reward_mean":0.7,"tokens":1,"seconds":0.25}
`
	m, err := ReadMetrics(strings.NewReader(text), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := Summarize("r", m)
	want := Summary{Run: "r", Rows: 4, FirstStep: 3, LastStep: 7,
		HasReward: true, FirstReward: 0.5, LastReward: 0.7, BestStep: 4, BestReward: 0.9,
		HasTokens: true, TotalTokens: 351, HasSeconds: true, WallSeconds: 3.75}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	rows := fmt.Sprint(got.rows())
	for _, frag := range []string{"4 (step 3 to 7)", "0.5 → 0.7 (+0.2)", "4 (reward mean 0.9)", "351", "3.75s"} {
		if !strings.Contains(rows, frag) {
			t.Errorf("summary rows %s lack %q", rows, frag)
		}
	}
}

func TestSummaryMatchesNaive(t *testing.T) {
	for _, n := range []int{1, 2, 3, 17, 100} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			rows, text := synthMetrics(n, uint64(n))
			m, err := ReadMetrics(strings.NewReader(text), "m.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			s := Summarize("r", m)
			var tokens, secs float64
			best, bestStep := math.Inf(-1), 0.0
			for _, r := range rows {
				tokens += f64(r["tokens"])
				secs += f64(r["seconds"])
				if v := f64(r["reward_mean"]); v > best {
					best, bestStep = v, f64(r["step"])
				}
			}
			if s.Rows != n || s.TotalTokens != tokens || math.Abs(s.WallSeconds-secs) > 1e-12*secs ||
				s.BestStep != bestStep || s.BestReward != best ||
				s.FirstReward != f64(rows[0]["reward_mean"]) || s.LastReward != f64(rows[n-1]["reward_mean"]) {
				t.Fatalf("summary %+v; want rows %d tokens %g seconds %g best %g at %g", s, n, tokens, secs, best, bestStep)
			}
			for _, k := range []string{"run", "note", "nested", "ok", "step"} {
				if m.Get(k) != nil {
					t.Errorf("non-numeric key %q became a series", k)
				}
			}
			if got := len(m.Series); got != 16 {
				t.Errorf("%d series, want the 16 numeric keys", got)
			}
		})
	}
}

func TestReadMetricsNoStepUsesRowNumber(t *testing.T) {
	m, err := ReadMetrics(strings.NewReader("{\"loss\":1}\n{\"loss\":0.5}"), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Get("loss"); !slices.Equal(s.X, []float64{1, 2}) || !slices.Equal(s.Y, []float64{1, 0.5}) {
		t.Fatalf("loss series %+v", s)
	}
}

func TestReadMetricsErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"blank", "{\"step\":1,\"loss\":1}\n\n{\"step\":2,\"loss\":1}\n", "m.jsonl:2: blank line"},
		{"garbled", "{\"step\":1,\"loss\":1}\n{\"step\":2,\"lo\n{\"step\":3,\"loss\":1}\n", "m.jsonl:2:"},
		{"garbled last line, ended", "{\"step\":1,\"loss\":1}\n{\"step\":2,\"lo\n", "m.jsonl:2:"},
		{"only line torn", "{\"step\":1,\"lo", "m.jsonl: no metrics rows"},
		{"truncated mid-value", "{\"step\":1,\"loss\":}\n", "m.jsonl:1:"},
		{"not an object", "{\"step\":1}\n[1,2]\n", "m.jsonl:2:"},
		{"null row", "null\n", "m.jsonl:1: not a JSON object"},
		{"two objects", "{\"step\":1} {\"step\":2}\n", "m.jsonl:1: trailing data"},
		{"step backwards", "{\"step\":1}\n{\"step\":2}\n{\"step\":2}\n", "m.jsonl:3: step 2 does not follow step 2"},
		{"fractional step", "{\"step\":1.5}\n", "m.jsonl:1: step 1.5"},
		{"string step", "{\"step\":\"1\"}\n", "m.jsonl:1: step"},
		{"number past float64", "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":1e999}\n", `m.jsonl:2: "loss" is 1e999`},
		{"empty", "", "m.jsonl: no metrics rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMetrics(strings.NewReader(tc.text), "m.jsonl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A last line that no newline ends and that is no JSON object is what a
// kill mid-append leaves (checkpoint.RepairMetrics drops it on resume), or
// a row being written as the file is read: the rows before it are drawn,
// and the page says the line was left out. The report refused the run.
func TestReadMetricsTornLastLine(t *testing.T) {
	m, err := ReadMetrics(strings.NewReader("{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":0.5}\n{\"step\":3,\"lo"), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Get("loss"); m.Torn != 3 || !slices.Equal(m.Steps, []float64{1, 2}) || !slices.Equal(s.Y, []float64{1, 0.5}) {
		t.Fatalf("torn %d, steps %v, loss %+v", m.Torn, m.Steps, s)
	}
	pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "r", Metrics: m}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Notes) != 1 || !strings.HasPrefix(pg.Notes[0], "m.jsonl:3: the last line is cut short") {
		t.Fatalf("notes %q", pg.Notes)
	}
}

func TestReadEval(t *testing.T) {
	rows, err := ReadEval(strings.NewReader(evalJSONL), "e.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[2].Label != "after-grpo" || rows[2].Step != 6 || rows[2].Metrics["accuracy"] != 0.45 ||
		len(rows[2].Metrics) != 2 || rows[2].Where != "e.jsonl:3" {
		t.Fatalf("rows %+v", rows)
	}
	sec := evalSection([]RunInput{{Name: "r"}}, rows)
	cs := sec.Charts
	if len(cs) != 2 || cs[0].ID != "eval-accuracy" || len(cs[0].Lines) != 2 ||
		!slices.Equal(cs[0].Lines[1].X, []float64{6, 12}) || !slices.Equal(cs[0].Lines[1].Y, []float64{0.45, 0.55}) {
		t.Fatalf("eval charts %+v", cs)
	}
	// The table lists rows by step, the string "model" among the settings.
	if got := sec.Table.Head; !slices.Equal(got, []string{"label", "step", "model", "accuracy", "mean_reward"}) {
		t.Fatalf("eval table head %q", got)
	}
	if got := sec.Table.Rows[1]; !slices.Equal(got, []string{"after-grpo", "6", "x", "0.45", "0.3"}) {
		t.Fatalf("eval table row 2 %q", got)
	}
	for _, tc := range []struct{ text, want string }{
		{"{\"step\":1,\"acc\":1}\n", "e.jsonl:1: missing string \"label\""},
		{"{\"label\":\"a\"}\n", "e.jsonl:1: no numeric metric"},
		{"{\"label\":\"a\",\"acc\":1}\n{\"label\":", "e.jsonl:2:"},
		{"{\"label\":\"a\",\"acc\":1}\n\n{\n  \"label\": \"b\",\n  \"acc\": 1,\n", "e.jsonl:3:"},
		{"{\"label\":\"a\",\"acc\":1}\n[{\"label\":\"b\",\"acc\":1}, 3]\n", "e.jsonl:2[1]: not a JSON object"},
		{"{\"label\":\"a\",\"acc\":1}\n\"text\"\n", "e.jsonl:2: not a JSON object"},
		{"{\"label\":\"a\",\"run\":1,\"acc\":1}\n", "e.jsonl:1: \"run\" is not a string"},
		{"{\"label\":\"a\",\"step\":-1,\"acc\":1}\n", "e.jsonl:1: step -1"},
		{"", "e.jsonl: no eval rows"},
	} {
		if _, err := ReadEval(strings.NewReader(tc.text), "e.jsonl"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.text, err, tc.want)
		}
	}
}

// jqPretty is an eval file as jq writes it by default, the way
// pipelines/demo.sh wrote out/demo/eval/*.json before it passed -c: one
// pretty-printed object. The old line-by-line reader failed on it with
// ":1: unexpected EOF".
const jqPretty = `{
  "label": "rl T=1",
  "step": 16,
  "run": "rl",
  "model": "rl",
  "temperature": 1,
  "episodes": 200,
  "success": 0.73,
  "mean_reward": 0.6162000000000004
}
{
  "label": "rl T=0",
  "step": 16,
  "model": "rl",
  "temperature": 0,
  "success": 0.925
}
`

func TestReadEvalPrettyPrintedAndArrays(t *testing.T) {
	rows, err := ReadEval(strings.NewReader(jqPretty), "rl-T1.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Label != "rl T=1" || rows[0].Step != 16 || rows[0].Run != "rl" || rows[1].Where != "rl-T1.json:11" {
		t.Fatalf("rows %+v", rows)
	}
	// Settings are shown, not plotted: a chart of the temperature over
	// steps says nothing.
	if !maps.Equal(rows[0].Metrics, map[string]float64{"success": 0.73, "mean_reward": 0.6162000000000004}) ||
		!maps.Equal(rows[0].Settings, map[string]string{"model": "rl", "temperature": "1", "episodes": "200"}) {
		t.Fatalf("row 1 metrics %v settings %v", rows[0].Metrics, rows[0].Settings)
	}
	arr, err := ReadEval(strings.NewReader(`[{"label":"a","acc":0.5},{"label":"b","step":2,"acc":0.7}]`), "e.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(arr) != 2 || arr[1].Label != "b" || arr[1].Step != 2 || arr[1].Where != "e.json:1[1]" {
		t.Fatalf("array rows %+v", arr)
	}
}

func TestBuildCancelled(t *testing.T) {
	_, text := synthMetrics(3, 1)
	m, err := ReadMetrics(strings.NewReader(text), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, Input{Runs: []RunInput{{Name: "r", Metrics: m}}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestGroupDigits(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1\u2009000", 618913: "618\u2009913", 1234567: "1\u2009234\u2009567", -1000: "-1\u2009000"} {
		if got := groupDigits(v); got != want {
			t.Errorf("groupDigits(%g) = %q, want %q", v, got, want)
		}
	}
}

// A metric whose name starts with a letter beyond ASCII gets a chart
// titled in valid UTF-8: the title's first byte was upper-cased alone,
// which split "日本語" into an invalid byte sequence on the page.
func TestMetricTitleUnicode(t *testing.T) {
	m, err := ReadMetrics(strings.NewReader("{\"step\":1,\"日本語\":1,\"élan_rate\":2}\n{\"step\":2,\"日本語\":3,\"élan_rate\":1}\n"), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "r", Metrics: m}}})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := pg.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(buf.String()) {
		t.Errorf("the page is not valid UTF-8")
	}
	for _, want := range []string{"<figcaption>日本語</figcaption>", "<figcaption>Élan rate</figcaption>"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// A run's "tokens" or "seconds" whose sum passes the float64 range (rows
// near 1.8e308) summed to +Inf: the summary read "total tokens +Inf", and
// the page's chart data could not be written, with an error that named
// neither the metrics file nor the key.
func TestSumOverflowNamed(t *testing.T) {
	for _, key := range []string{"tokens", "seconds"} {
		text := fmt.Sprintf("{\"step\":1,%q:1}\n{\"step\":2,%q:1.7e308}\n{\"step\":3,%q:1.7e308}\n", key, key, key)
		m, err := ReadMetrics(strings.NewReader(text), "run/metrics.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if rows := fmt.Sprint(Summarize("r", m).rows()); strings.Contains(rows, "Inf") || !strings.Contains(rows, "past 1.8e308") {
			t.Errorf("%s: summary rows %s; want the sum said to pass 1.8e308, not +Inf", key, rows)
		}
		_, err = Build(context.Background(), Input{Runs: []RunInput{{Name: "r", Metrics: m}}})
		if err == nil || !strings.Contains(err.Error(), "run/metrics.jsonl") || !strings.Contains(err.Error(), strconv.Quote(key)) || !strings.Contains(err.Error(), "step 3") {
			t.Errorf("%s: Build: %v; want an error naming run/metrics.jsonl, %q and step 3", key, err, key)
		}
	}
}
