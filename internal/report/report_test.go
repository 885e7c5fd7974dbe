package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"gonum.org/v1/plot/vg"
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

// writeTrajectories writes groups at steps 1..steps with seeded rewards
// (one trajectory per group left unscored) and returns every scored reward
// by step.
func writeTrajectories(t *testing.T, path string, steps int) map[int64][]float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	want := map[int64][]float64{}
	var groups []trajectory.Group
	for s := int64(1); s <= int64(steps); s++ {
		for g := 0; g < 3; g++ {
			grp := trajectory.Group{ID: fmt.Sprintf("s%d-g%d", s, g)}
			for k := 0; k < 4; k++ {
				tr := trajectory.Trajectory{Run: "r1", Step: s, GroupID: grp.ID, ID: fmt.Sprintf("%s-%d", grp.ID, k), Env: "demo",
					Messages: []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}}
				if k != 3 {
					r := float64(s)/10 + rng.Float64()
					tr.Reward = &r
					want[s] = append(want[s], r)
				}
				grp.Trajectories = append(grp.Trajectories, tr)
			}
			groups = append(groups, grp)
		}
	}
	if err := trajectory.WriteFile(context.Background(), path, groups, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return want
}

const evalJSONL = `{"label":"base","step":0,"accuracy":0.30,"mean_reward":0.1}
{"label":"after-grpo","step":12,"accuracy":0.55,"mean_reward":0.4}
{"label":"after-grpo","step":6,"accuracy":0.45,"mean_reward":0.3,"model":"x"}
`

func TestBuildHasEveryPlot(t *testing.T) {
	ctx := context.Background()
	_, text := synthMetrics(12, 1)
	m, err := ReadMetrics(strings.NewReader(text), "metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	evals, err := ReadEval(strings.NewReader(evalJSONL), "eval.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.parquet")
	writeTrajectories(t, path, 12)
	steps, err := TrajectoryRewards(ctx, fileset.Files(path))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := Build(ctx, Input{Run: "r1", Metrics: m, Evals: evals, Trajectories: steps})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range pg.Sections {
		for _, f := range s.Figures {
			ids = append(ids, f.ID)
			checkPNG(t, f.ID, f.PNG)
		}
	}
	want := []string{
		"reward_mean", "loss", "policy_loss", "kl", "entropy", "grad_norm", "clip_frac", "lr", "ratio_mean",
		"eval-accuracy", "eval-mean_reward",
		"traj-reward", "traj-scored",
		"groups", "groups_trainable", "seconds", "tokens", "tokens_per_s", "trainable_tokens",
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("figures\n got %q\nwant %q", ids, want)
	}

	var html bytes.Buffer
	if err := pg.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	srcs := regexp.MustCompile(`src="data:image/png;base64,([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(html.String(), -1)
	if len(srcs) != len(want) {
		t.Fatalf("html has %d embedded PNGs, want %d", len(srcs), len(want))
	}
	for i, s := range srcs {
		b, err := base64.StdEncoding.DecodeString(s[1])
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		checkPNG(t, want[i], b)
	}
	for _, frag := range []string{"<title>Hone run r1</title>", "Training", "Evaluation", "Trajectories", "Other metrics"} {
		if !strings.Contains(html.String(), frag) {
			t.Errorf("html lacks %q", frag)
		}
	}
	if strings.Contains(html.String(), "<script") || strings.Contains(html.String(), "http") {
		t.Error("page is not self-contained: it has a script or a link")
	}
}

func checkPNG(t *testing.T, id string, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", id, err)
	}
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	wantW, wantH := int(math.Round(float64(plotW/vg.Inch)*plotDPI)), int(math.Round(float64(plotH/vg.Inch)*plotDPI))
	if abs(w-wantW) > 1 || abs(h-wantH) > 1 {
		t.Fatalf("%s: %dx%d, want %dx%d", id, w, h, wantW, wantH)
	}
	// A drawn plot is mostly white with some ink; a blank image is not.
	ink := 0
	for y := 0; y < h; y += 3 {
		for x := 0; x < w; x += 3 {
			r, g, bb, _ := img.At(x, y).RGBA()
			if r+g+bb < 3*0xc000 {
				ink++
			}
		}
	}
	if frac := float64(ink) / float64((w/3)*(h/3)); frac < 0.005 || frac > 0.5 {
		t.Fatalf("%s: %.3f of pixels are dark; not a plot", id, frac)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
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
		{"garbled", "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":1}\n{\"step\":3,\"lo", "m.jsonl:3:"},
		{"truncated mid-value", "{\"step\":1,\"loss\":}\n", "m.jsonl:1:"},
		{"not an object", "{\"step\":1}\n[1,2]\n", "m.jsonl:2:"},
		{"null row", "null\n", "m.jsonl:1: not a JSON object"},
		{"two objects", "{\"step\":1} {\"step\":2}\n", "m.jsonl:1: trailing data"},
		{"step backwards", "{\"step\":1}\n{\"step\":2}\n{\"step\":2}\n", "m.jsonl:3: step 2 does not follow step 2"},
		{"fractional step", "{\"step\":1.5}\n", "m.jsonl:1: step 1.5"},
		{"string step", "{\"step\":\"1\"}\n", "m.jsonl:1: step"},
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

func TestReadEval(t *testing.T) {
	rows, err := ReadEval(strings.NewReader(evalJSONL), "e.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[2].Label != "after-grpo" || rows[2].Step != 6 || rows[2].Metrics["accuracy"] != 0.45 ||
		len(rows[2].Metrics) != 2 || rows[2].Where != "e.jsonl:3" {
		t.Fatalf("rows %+v", rows)
	}
	cs := evalCharts(rows)
	if len(cs) != 2 || cs[0].ID != "eval-accuracy" || len(cs[0].Lines) != 2 ||
		!slices.Equal(cs[0].Lines[1].X, []float64{6, 12}) || !slices.Equal(cs[0].Lines[1].Y, []float64{0.45, 0.55}) {
		t.Fatalf("eval charts %+v", cs)
	}
	for _, tc := range []struct{ text, want string }{
		{"{\"step\":1,\"acc\":1}\n", "e.jsonl:1: missing string \"label\""},
		{"{\"label\":\"a\"}\n", "e.jsonl:1: no numeric metric"},
		{"{\"label\":\"a\",\"acc\":1}\n{\"label\":", "e.jsonl:2:"},
		{"{\"label\":\"a\",\"step\":-1,\"acc\":1}\n", "e.jsonl:1: step -1"},
		{"", "e.jsonl: no eval rows"},
	} {
		if _, err := ReadEval(strings.NewReader(tc.text), "e.jsonl"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.text, err, tc.want)
		}
	}
}

func TestTrajectoryRewardsMatchNaive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.parquet")
	want := writeTrajectories(t, path, 5)
	steps, err := TrajectoryRewards(context.Background(), fileset.Files(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 5 {
		t.Fatalf("%d steps, want 5", len(steps))
	}
	for _, s := range steps {
		xs := want[s.Step]
		var mean, ss float64
		for _, x := range xs {
			mean += x / float64(len(xs))
		}
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		std := math.Sqrt(ss / float64(len(xs)-1))
		if s.Reward.Scored != int64(len(xs)) || s.Reward.Unscored != 3 ||
			math.Abs(s.Reward.Mean-mean) > 1e-12 || math.Abs(s.Reward.Std-std) > 1e-12*std {
			t.Fatalf("step %d: %+v, want mean %g std %g over %d", s.Step, s.Reward, mean, std, len(xs))
		}
	}
	cs := trajCharts(steps, nil)
	if len(cs) != 2 || len(cs[0].Lines[0].Lo) != 5 || math.Abs(cs[0].Lines[0].Hi[0]-cs[0].Lines[0].Lo[0]-2*steps[0].Reward.Std) > 1e-12 {
		t.Fatalf("trajectory charts %+v", cs)
	}
	if _, err := TrajectoryRewards(context.Background(), fileset.Files(filepath.Join(t.TempDir(), "none.parquet"))); err == nil {
		t.Fatal("a missing trajectory file gave no error")
	}
}

func TestEdgeRunsRender(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"one step", `{"step":1,"loss":1,"reward_mean":0.5,"reward_std":0.1}`},
		{"constant", "{\"step\":1,\"lr\":0}\n{\"step\":2,\"lr\":0}\n"},
		{"tiny lr", "{\"step\":1,\"lr\":1e-7}\n{\"step\":2,\"lr\":3e-7}\n"},
		{"huge", "{\"step\":1,\"tokens\":1e9}\n{\"step\":2,\"tokens\":3e12}\n"},
		{"reward_std alone", "{\"step\":1,\"reward_std\":1}\n{\"step\":2,\"reward_std\":2}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ReadMetrics(strings.NewReader(tc.text), "m.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			pg, err := Build(context.Background(), Input{Run: "r", Metrics: m})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range pg.Sections {
				for _, f := range s.Figures {
					checkPNG(t, f.ID, f.PNG)
					n++
				}
			}
			if n != len(m.Series)-boolInt(m.Get("reward_std") != nil && m.Get("reward_mean") != nil) {
				t.Fatalf("%d figures for %d series", n, len(m.Series))
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBuildCancelled(t *testing.T) {
	_, text := synthMetrics(3, 1)
	m, err := ReadMetrics(strings.NewReader(text), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, Input{Run: "r", Metrics: m}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestTickLabels(t *testing.T) {
	for _, r := range [][2]float64{{5.5397, 5.5445}, {0, 1}, {4750, 5900}, {1e-7, 3e-7}, {1e9, 3e12}, {-2, 2}, {0.0092, 0.0108}} {
		ts := (compactTicks{}).Ticks(r[0], r[1])
		seen := map[string]bool{}
		for _, tk := range ts {
			if tk.Label == "" {
				continue
			}
			if seen[tk.Label] {
				t.Errorf("range %v: label %q repeats in %v", r, tk.Label, ts)
			}
			seen[tk.Label] = true
			if strings.HasSuffix(tk.Label, ".0") || strings.Contains(tk.Label, "e-0") || strings.Contains(tk.Label, "e+") {
				t.Errorf("range %v: label %q is not compact", r, tk.Label)
			}
		}
		if len(seen) < 2 {
			t.Errorf("range %v: fewer than two labels: %v", r, ts)
		}
	}
	for in, want := range map[string]string{"2.50e-05": "2.5e-5", "1.00e+09": "1e9", "3e-07": "3e-7", "1.5": "1.5"} {
		if got := trimExp(in); got != want {
			t.Errorf("trimExp(%q) = %q, want %q", in, got, want)
		}
	}
	for _, r := range [][2]float64{{1, 2}, {1, 3}, {0, 116}} {
		for _, tk := range (integerTicks{}).Ticks(r[0], r[1]) {
			if tk.Value != math.Trunc(tk.Value) {
				t.Errorf("range %v: tick at %g on a step axis", r, tk.Value)
			}
		}
	}
}

func TestGroupDigits(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1\u2009000", 618913: "618\u2009913", 1234567: "1\u2009234\u2009567", -1000: "-1\u2009000"} {
		if got := groupDigits(v); got != want {
			t.Errorf("groupDigits(%g) = %q, want %q", v, got, want)
		}
	}
}
