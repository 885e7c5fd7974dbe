package report

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// roundFixture is what writeRounds wrote, for the tests to check against.
type roundFixture struct {
	files []TrajFile // Run and Step set as a manifest.json would
	// rewards[r] are the scored rewards of round r (1-based), components
	// and metrics their sums, tokens the sampled tokens per episode.
	rewards map[int][]float64
	found   map[int][]float64
	tokens  map[int][]float64
}

// writeRounds writes rounds trajectory files the way the demo's GRPO loop
// does for run: round 1 sampled by the warm-up adapter "warmup@300" (so
// its rows carry step 300), round r>1 by run@(r-1); each round trained at
// step r. Each file has 3 groups of 4 episodes: a user question, an
// assistant tool call, the tool's answer, the assistant's reply (with its
// sampled token ids), a reward with two components and two env metrics.
// Group 1 of each round has the widest reward spread; one episode per
// round is errored and unscored.
func writeRounds(t *testing.T, dir, run string, rounds int) roundFixture {
	t.Helper()
	fx := roundFixture{rewards: map[int][]float64{}, found: map[int][]float64{}, tokens: map[int][]float64{}}
	for r := 1; r <= rounds; r++ {
		adapter, step := fmt.Sprintf("%s@%d", run, r-1), int64(r-1)
		if r == 1 {
			adapter, step = "warmup@300", 300
		}
		var groups []trajectory.Group
		for g := 0; g < 3; g++ {
			grp := trajectory.Group{ID: fmt.Sprintf("%s-r%d-g%d", run, r, g)}
			for k := 0; k < 4; k++ {
				grp.Trajectories = append(grp.Trajectories, fixtureEpisode(&fx, run, adapter, step, r, g, k))
			}
			groups = append(groups, grp)
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-round-%03d.parquet", run, r))
		if err := trajectory.WriteFile(context.Background(), path, groups, trajectory.WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		fx.files = append(fx.files, TrajFile{Path: path, Run: run, Step: r})
	}
	return fx
}

func fixtureEpisode(fx *roundFixture, run, adapter string, step int64, r, g, k int) trajectory.Trajectory {
	id := fmt.Sprintf("%s-r%d-g%d-e%d", run, r, g, k)
	ntok := 3 + k + r
	ids := make([]int32, ntok)
	tr := trajectory.Trajectory{Run: run, Step: step, Model: adapter, Adapter: adapter, GroupID: fmt.Sprintf("%s-r%d-g%d", run, r, g),
		ID: id, Env: "calc", ScenarioID: fmt.Sprintf("sc-%d-%d", r, g),
		Messages: []trajectory.Message{
			{Role: "system", Content: "You are a calculator."},
			{Role: "user", Content: fmt.Sprintf("What is %d+%d?", r, g)},
			{Role: "assistant", Trainable: true, TokenIDs: []int32{1, 2}, ToolCalls: []trajectory.ToolCall{{ID: "call-" + id, Type: "function", Name: "add", Arguments: fmt.Sprintf(`{"a":%d,"b":%d}`, r, g)}}},
			{Role: "tool", ToolCallID: "call-" + id, Content: fmt.Sprint(r + g)},
			{Role: "assistant", Trainable: true, TokenIDs: ids, Content: fmt.Sprintf("answer %d <%s>", r+g, id), FinishReason: "stop"},
		}}
	if g == 2 && k == 3 {
		tr.Error = "env crashed"
		fx.tokens[r] = append(fx.tokens[r], float64(2+ntok))
		return tr
	}
	// Rewards rise with the round; group 1 spreads widest (k×0.5), the
	// others by k×0.1.
	spread := 0.1
	if g == 1 {
		spread = 0.5
	}
	rew := 0.1*float64(r) + spread*float64(k) - 0.05*float64(g)
	rew = math.Round(rew*1000) / 1000
	found := float64((k + r) % 2)
	tr.Reward = &rew
	tr.RewardComponents = []trajectory.RewardComponent{{Name: "env", Value: rew, Explanation: "from the env"}, {Name: "length", Value: -0.01 * float64(ntok), Explanation: "shorter is better"}}
	tr.Metrics = map[string]float64{"found": found, "turns": 2}
	fx.rewards[r] = append(fx.rewards[r], rew)
	fx.found[r] = append(fx.found[r], found)
	fx.tokens[r] = append(fx.tokens[r], float64(2+ntok))
	return tr
}

// grpoMetrics is a GRPO run's metrics.jsonl: n steps, KL 0 (beta 0) and a
// constant learning rate, the rest moving; a step every 10 wall seconds, of
// which 1.5 train.
func grpoMetrics(t *testing.T, name string, n int, lr float64) *Metrics {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		x := float64(i)
		fmt.Fprintf(&b, `{"step":%d,"loss":%g,"kl":0,"lr":%g,"entropy":%g,"grad_norm":%g,"reward_mean":%g,"reward_std":%g,"tokens":%d,"seconds":%g,"groups":3,"time":%.3f}`+"\n",
			i, 0.5*math.Exp(-x/8), lr, 2.3-0.1*x, 0.8+0.3*math.Sin(x), 0.2+0.05*x, 0.3-0.01*x, 1000+10*i, 1.5, 1.7e9+10*x)
	}
	m, err := ReadMetrics(strings.NewReader(b.String()), name+"/metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const fixtureConfig = `{"model":"models/tiny","run":"%s","rank":8,"targets":["q_proj","v_proj"],"lr":%g,"lr_schedule":"constant",
"loss":{"loss":"art","beta":0,"epsilon":0.2}}`

// fixtureInput is a two-run page: run a (lr 1e-3) and run b (lr 2e-3),
// each with 16 steps, hyperparameters, 4 rounds of trajectories, and
// evals.
func fixtureInput(t *testing.T, dir string) (Input, map[string]roundFixture) {
	t.Helper()
	in := Input{}
	fx := map[string]roundFixture{}
	for _, r := range []struct {
		name string
		lr   float64
	}{{"a", 1e-3}, {"b", 2e-3}} {
		cfg, err := FlattenConfig([]byte(fmt.Sprintf(fixtureConfig, r.name, r.lr)), r.name+"/train_config.json")
		if err != nil {
			t.Fatal(err)
		}
		in.Runs = append(in.Runs, RunInput{Name: r.name, Metrics: grpoMetrics(t, r.name, 16, r.lr), Config: cfg, ConfigStep: 16})
		fx[r.name] = writeRounds(t, dir, r.name, 4)
	}
	var files []TrajFile
	for _, name := range []string{"a", "b"} {
		files = append(files, fx[name].files...)
	}
	tr, err := ReadTrajectories(context.Background(), files, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	in.Trajectories = tr
	evals, err := ReadEval(strings.NewReader(jqPretty+`{"label":"base","step":0,"run":"b","success":0.1,"mean_reward":-1}`), "eval.json")
	if err != nil {
		t.Fatal(err)
	}
	in.Evals = evals
	return in, fx
}
