package report

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// The demo's round 1 is sampled by warmup@300, so its rows carry step 300;
// the old report drew it at x=300, far right of a 4-step run. A file the
// run's manifest lists is drawn at the step that trained on it, and every
// point says which adapter sampled it.
func TestTrajectoryStepsPlacedAtTrainingStep(t *testing.T) {
	ctx := context.Background()
	fx := writeRounds(t, t.TempDir(), "rl", 4)
	tr, err := ReadTrajectories(ctx, fx.files, []string{"rl"})
	if err != nil {
		t.Fatal(err)
	}
	var xs []float64
	for _, s := range tr.Steps {
		xs = append(xs, s.X)
		if !s.Trained {
			t.Errorf("step %g not marked trained", s.X)
		}
	}
	if !slices.Equal(xs, []float64{1, 2, 3, 4}) {
		t.Fatalf("steps drawn at %v, want the training steps 1..4", xs)
	}
	if got := stepNote(tr.Steps[0]); !strings.HasPrefix(got, "sampled by warmup@300 · trained at step 1 · 12 episodes, 11 scored, 1 errored") {
		t.Errorf("step 1 note %q", got)
	}
	if got := stepNote(tr.Steps[2]); !strings.HasPrefix(got, "sampled by rl@2 · trained at step 3") {
		t.Errorf("step 3 note %q", got)
	}

	// Without a manifest: the warm-up's episodes at step 0 (before the
	// run's first update), the run's own at their sampling step.
	var bare []TrajFile
	for _, f := range fx.files {
		bare = append(bare, TrajFile{Path: f.Path})
	}
	tr, err = ReadTrajectories(ctx, bare, []string{"rl"})
	if err != nil {
		t.Fatal(err)
	}
	xs = xs[:0]
	for _, s := range tr.Steps {
		xs = append(xs, s.X)
	}
	if !slices.Equal(xs, []float64{0, 1, 2, 3}) {
		t.Fatalf("without a manifest, steps drawn at %v, want 0 1 2 3", xs)
	}
	if got := stepNote(tr.Steps[0]); !strings.Contains(got, "sampled by warmup@300 · drawn at step 0") {
		t.Errorf("warm-up step note %q", got)
	}
	if got := stepNote(tr.Steps[1]); !strings.Contains(got, "sampled by rl@1 · drawn at the sampling step") {
		t.Errorf("step 1 note %q", got)
	}
	pg, err := Build(ctx, Input{Runs: []RunInput{{Name: "rl", Metrics: grpoMetrics(t, "rl", 4, 1e-3)}}, Trajectories: tr})
	if err != nil {
		t.Fatal(err)
	}
	c := pg.Chart("traj-reward")
	if c == nil || slices.Max(c.Lines[0].X) != 3 || len(c.Lines[0].Note) != 4 || !strings.Contains(c.Lines[0].Note[0], "warmup@300") {
		t.Fatalf("trajectory reward chart %+v", c)
	}
}

func TestTrajectoriesOfOtherRunsLeftOut(t *testing.T) {
	fx := writeRounds(t, t.TempDir(), "other", 2)
	var bare []TrajFile
	for _, f := range fx.files {
		bare = append(bare, TrajFile{Path: f.Path})
	}
	tr, err := ReadTrajectories(context.Background(), bare, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Steps) != 0 || tr.Unplaced != 24 || !slices.Equal(tr.UnplacedRuns, []string{"other"}) {
		t.Fatalf("steps %d, unplaced %d %v; want 0, 24 [other]", len(tr.Steps), tr.Unplaced, tr.UnplacedRuns)
	}
	in := Input{Runs: []RunInput{{Name: "a", Metrics: grpoMetrics(t, "a", 3, 1e-3)}, {Name: "b", Metrics: grpoMetrics(t, "b", 3, 1e-3)}}, Trajectories: tr}
	pg, err := Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Notes) != 1 || !strings.Contains(pg.Notes[0], "24 episodes of run(s) other are not shown") {
		t.Fatalf("notes %q", pg.Notes)
	}
}

// quantile is numpy's default (linear) quantile, computed the slow way.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func TestTrajectoryAggregatesMatchNaive(t *testing.T) {
	fx := writeRounds(t, t.TempDir(), "rl", 3)
	tr, err := ReadTrajectories(context.Background(), fx.files, []string{"rl"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.LengthUnit != "tokens" {
		t.Fatalf("length unit %q, want tokens (every turn has its token ids)", tr.LengthUnit)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
	for _, s := range tr.Steps {
		r := int(s.X)
		want := fx.rewards[r]
		if s.Episodes != 12 || s.Scored != 11 || s.Errors != 1 || len(s.Rewards) != 11 {
			t.Fatalf("step %d: %d episodes, %d scored, %d errors", r, s.Episodes, s.Scored, s.Errors)
		}
		for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
			if got := s.Quantile(q); !near(got, quantile(want, q)) {
				t.Errorf("step %d: quantile %g = %g, want %g", r, q, got, quantile(want, q))
			}
		}
		if got := s.Components["env"].Value(); !near(got, mean(want)) {
			t.Errorf("step %d: component env %g, want %g", r, got, mean(want))
		}
		if got := s.EnvMetrics["found"].Value(); !near(got, mean(fx.found[r])) {
			t.Errorf("step %d: metric found %g, want %g", r, got, mean(fx.found[r]))
		}
		l := s.Length("tokens")
		if !near(l.Value(), mean(fx.tokens[r])) || l.Min != slices.Min(fx.tokens[r]) || l.Max != slices.Max(fx.tokens[r]) {
			t.Errorf("step %d: length %+v, want mean %g of %v", r, l, mean(fx.tokens[r]), fx.tokens[r])
		}
	}

	// A server that gave no token ids: length is counted in characters.
	path := filepath.Join(t.TempDir(), "noids.parquet")
	rew := 1.0
	g := trajectory.Group{ID: "g", Trajectories: []trajectory.Trajectory{{Run: "rl", Step: 1, Adapter: "rl@1", GroupID: "g", ID: "t", Reward: &rew,
		Messages: []trajectory.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "héllo", ReasoningContent: "abc"}}}}}
	if err := trajectory.WriteFile(context.Background(), path, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err = ReadTrajectories(context.Background(), []TrajFile{{Path: path}}, []string{"rl"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.LengthUnit != "characters" || tr.Steps[0].Length("characters").Value() != 8 {
		t.Fatalf("unit %q, length %+v; want 8 characters", tr.LengthUnit, tr.Steps[0].Length("characters"))
	}
}

// Each step shows the group whose rewards spread widest, its best and its
// worst episode, rendered as a conversation.
func TestRolloutBestAndWorst(t *testing.T) {
	dir := t.TempDir()
	fx := writeRounds(t, dir, "rl", 2)
	// A long episode: 50 messages, one of them longer than a page carries.
	long := trajectory.Group{ID: "long"}
	for k, rew := range []float64{-5, 5} {
		tr := trajectory.Trajectory{Run: "rl", Step: 2, Adapter: "rl@2", GroupID: "long", ID: fmt.Sprintf("long-%d", k), Reward: &rew}
		for i := 0; i < 50; i++ {
			role := []string{"user", "assistant"}[i%2]
			tr.Messages = append(tr.Messages, trajectory.Message{Role: role, Content: fmt.Sprintf("turn %d ", i) + strings.Repeat("x", 10*i)})
		}
		tr.Messages[0].Content = strings.Repeat("é", maxShownRunes+7)
		long.Trajectories = append(long.Trajectories, tr)
	}
	longPath := filepath.Join(dir, "long.parquet")
	if err := trajectory.WriteFile(context.Background(), longPath, []trajectory.Group{long}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	files := append(fx.files, TrajFile{Path: longPath, Run: "rl", Step: 3})
	tr, err := ReadTrajectories(context.Background(), files, []string{"rl"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tr.Steps[:2] {
		ro := s.Rollout
		want := fmt.Sprintf("rl-r%d-g1", int(s.X))
		if ro == nil || ro.GroupID != want || ro.Best == nil || ro.Worst == nil ||
			ro.Best.ID != want+"-e3" || ro.Worst.ID != want+"-e0" || *ro.Best.Reward <= *ro.Worst.Reward {
			t.Fatalf("step %g rollout %+v; want group %s, best e3, worst e0", s.X, ro, want)
		}
	}
	lr := tr.Steps[2].Rollout
	if lr.Best.ID != "long-1" || lr.Worst.ID != "long-0" || len(lr.Best.Messages) != maxShownMessages ||
		lr.Best.Omitted != 10 || lr.Best.OmittedAt != maxShownMessages/2 ||
		!strings.HasSuffix(lr.Best.Messages[0].Content, " … (7 more characters)") ||
		lr.Best.Messages[maxShownMessages-1].Content != "turn 49 "+strings.Repeat("x", 490) {
		t.Fatalf("long rollout: best %s worst %s, %d messages, omitted %d at %d", lr.Best.ID, lr.Worst.ID, len(lr.Best.Messages), lr.Best.Omitted, lr.Best.OmittedAt)
	}

	pg, err := Build(context.Background(), Input{Runs: []RunInput{{Name: "rl", Metrics: grpoMetrics(t, "rl", 3, 1e-3)}}, Trajectories: tr})
	if err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := pg.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, frag := range []string{
		`<section id="rollouts">`, `<option value="2" selected>3</option>`,
		`<div class="rollout" data-i="0" hidden>`, `<div class="rollout" data-i="2">`,
		"best of the group</b>: reward 1.55", "worst of the group</b>: reward 0.05",
		`sampled by <code>warmup@300</code> (step 300)`, "sampled by warmup@300 · trained at step 1",
		`<div class="msg role-tool">`, `calls <code>add</code><pre>{&#34;a&#34;:1,&#34;b&#34;:1}</pre>`,
		"answer 2 &lt;rl-r1-g1-e3&gt;", `<li title="shorter is better">length = -0.08</li>`,
		"… 10 messages left out …",
	} {
		if !strings.Contains(page, frag) {
			t.Errorf("page lacks %q", frag)
		}
	}
}

// A NaN reward is unscored (as hone-train and hone-inspect stats take it),
// and an infinite reward, component or environment metric is left out with
// a note: JSON cannot hold them, and one of them made the page's chart data
// null (every chart blank, exit 0) and the step's quartiles NaN.
func TestTrajectoriesNotFiniteValues(t *testing.T) {
	ctx := context.Background()
	nan, inf, half, one := math.NaN(), math.Inf(1), 0.5, 1.0
	ep := func(id string, r *float64, found float64) trajectory.Trajectory {
		return trajectory.Trajectory{Run: "rl", Step: 1, Adapter: "rl@1", GroupID: "g", ID: id, Reward: r,
			Metrics:          map[string]float64{"found": found},
			RewardComponents: []trajectory.RewardComponent{{Name: "fmt", Value: found}},
			Messages:         []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a", Trainable: true}}}
	}
	g := trajectory.Group{ID: "g", Trajectories: []trajectory.Trajectory{
		ep("a", &half, 1), ep("b", &nan, 0), ep("c", &inf, math.Inf(-1)), ep("d", &one, 0)}}
	path := filepath.Join(t.TempDir(), "r.parquet")
	if err := trajectory.WriteFile(ctx, path, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadTrajectories(ctx, []TrajFile{{Path: path}}, []string{"rl"})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Steps[0]
	if s.Episodes != 4 || s.Scored != 2 || !slices.Equal(s.Rewards, []float64{0.5, 1}) || tr.NotFinite != 3 ||
		s.EnvMetrics["found"].N != 3 || s.Components["fmt"].Value() != 1.0/3 {
		t.Fatalf("step %+v, not finite %d", s, tr.NotFinite)
	}
	if ro := s.Rollout; ro.Best.ID != "d" || ro.Worst.ID != "a" {
		t.Errorf("rollout best %s worst %s, want d and a", ro.Best.ID, ro.Worst.ID)
	}
	pg, err := Build(ctx, Input{Runs: []RunInput{{Name: "rl", Metrics: grpoMetrics(t, "rl", 2, 1e-3)}}, Trajectories: tr})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := pg.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "unsupported value") || !strings.Contains(b.String(), `"id":"traj-reward"`) {
		t.Errorf("page's chart data lacks the reward chart: %.300s", b.String()[strings.Index(b.String(), `id="hone-data"`):])
	}
	if len(pg.Notes) != 1 || !strings.HasPrefix(pg.Notes[0], "3 values of the episodes that are not finite") {
		t.Errorf("notes %q", pg.Notes)
	}
}

// An environment metric or reward component that is never finite (a
// ratio 0/0 in every episode) draws no chart: its chart had no lines,
// "lines": null in the page's data, and the page's script failed on it
// ("Cannot read properties of null").
func TestTrajectoriesMetricNeverFinite(t *testing.T) {
	ctx := context.Background()
	var g trajectory.Group
	g.ID = "g"
	for i, r := range []float64{0, 1} {
		r := r
		g.Trajectories = append(g.Trajectories, trajectory.Trajectory{Run: "rl", Step: 1, Adapter: "rl@1", GroupID: "g", ID: string(rune('a' + i)), Reward: &r,
			Metrics:          map[string]float64{"ratio": math.NaN(), "found": r},
			RewardComponents: []trajectory.RewardComponent{{Name: "judge", Value: math.Inf(1)}},
			Messages:         []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a", Trainable: true}}})
	}
	path := filepath.Join(t.TempDir(), "r.parquet")
	if err := trajectory.WriteFile(ctx, path, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadTrajectories(ctx, []TrajFile{{Path: path}}, []string{"rl"})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := Build(ctx, Input{Runs: []RunInput{{Name: "rl", Metrics: grpoMetrics(t, "rl", 2, 1e-3)}}, Trajectories: tr})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range pg.Sections {
		for _, c := range s.Charts {
			ids = append(ids, c.ID)
			if len(c.Lines) == 0 {
				t.Errorf("chart %s has no lines", c.ID)
			}
		}
	}
	if !slices.Contains(ids, "env-found") || slices.Contains(ids, "env-ratio") || slices.Contains(ids, "component-judge") {
		t.Errorf("charts %q: want env-found, and none for ratio or judge", ids)
	}
}
