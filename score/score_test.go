package score_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/score"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
	"github.com/hone-rl/hone/score/ruler"
)

// episode builds one trajectory: the shared scenario prompt, then the
// agent's answer. Rewards and metrics are what an environment would write.
func episode(group string, i int, answer string, reward *float64, win, illegal float64) trajectory.Trajectory {
	return trajectory.Trajectory{
		Run: "r1", ScenarioID: group, Split: trajectory.SplitTrain, GroupID: group,
		ID: fmt.Sprintf("%s-t%d", group, i), Env: "guess",
		Messages: []trajectory.Message{
			{Role: "system", Content: "Guess the secret number between 1 and 64."},
			{Role: "user", Content: "Scenario " + group},
			{Role: "assistant", Content: answer, Trainable: true, TokenIDs: []int32{1, 2}, Logprobs: []float32{-0.5, -0.1}},
		},
		Reward:    reward,
		Metrics:   map[string]float64{"win": win, "illegal": illegal},
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// groups returns n groups of size k; trajectory 0 of each "wins".
func groups(n, k int) []trajectory.Group {
	var gs []trajectory.Group
	for g := 0; g < n; g++ {
		id := fmt.Sprintf("g%d", g)
		grp := trajectory.Group{ID: id}
		for i := 0; i < k; i++ {
			answer, win := fmt.Sprintf("guess %d", 10+i), 0.0
			if i == 0 {
				answer, win = "guess 42: WIN", 1
			}
			grp.Trajectories = append(grp.Trajectories, episode(id, i, answer, trajectory.Float64(win), win, float64(i)))
		}
		gs = append(gs, grp)
	}
	return gs
}

func writeInput(t testing.TB, name string, gs []trajectory.Group) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := trajectory.WriteFile(context.Background(), p, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// scoreRun is score.Run with the counts it hands to Summary, which must
// be called exactly once.
func scoreRun(ctx context.Context, opts score.Options) (score.Summary, error) {
	var sum score.Summary
	calls := 0
	opts.Summary = func(s score.Summary) { sum = s; calls++ }
	err := score.Run(ctx, opts)
	if calls != 1 {
		err = errors.Join(err, fmt.Errorf("Summary called %d times, want once", calls))
	}
	return sum, err
}

// run scores inputs and returns the output bytes, the groups read back and
// the summary.
func run(t *testing.T, opts score.Options, inputs ...string) ([]byte, []trajectory.Group, score.Summary, error) {
	t.Helper()
	var out bytes.Buffer
	opts.Inputs, opts.Out = fileset.Files(inputs...), &out
	sum, err := scoreRun(context.Background(), opts)
	if err != nil && !errors.Is(err, score.ErrJudgeFailedAll) {
		return nil, nil, sum, err
	}
	runErr := err // a complete output comes with ErrJudgeFailedAll
	p := filepath.Join(t.TempDir(), "out.parquet")
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	gs, err := trajectory.ReadFile(context.Background(), p)
	if err != nil {
		t.Fatalf("read output back: %v", err)
	}
	return out.Bytes(), gs, sum, runErr
}

// baseOpts are the flag defaults, with the cache in a temp dir.
func baseOpts(t *testing.T) score.Options {
	return score.Options{OnJudgeError: score.PolicyFail, JudgeRetries: 2, Concurrency: 2,
		JudgeTimeout: 10 * time.Second, JudgeTemperature: math.NaN(), CacheDir: t.TempDir(),
		Backoff: func(int) time.Duration { return 0 }}
}

func comp(t *trajectory.Trajectory, name string) (float64, bool) {
	for _, c := range t.RewardComponents {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}

func ids(gs []trajectory.Group) string {
	var s []string
	for _, g := range gs {
		for _, t := range g.Trajectories {
			s = append(s, t.ID)
		}
	}
	return strings.Join(s, ",")
}

func TestEnvAndFormula(t *testing.T) {
	in := writeInput(t, "in.parquet", groups(2, 3))
	opts := baseOpts(t)
	opts.Scorers = []string{"env", "formula:win - 0.1*illegal + 0*env"}
	out1, gs, sum, err := run(t, opts, in)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Groups != 2 || sum.Scored != 2 || sum.Written != 6 || len(sum.Judge) != 0 {
		t.Fatalf("summary = %+v", sum)
	}
	for _, g := range gs {
		for i, tr := range g.Trajectories {
			win := 0.0
			if i == 0 {
				win = 1
			}
			want := win - 0.1*float64(i)
			if tr.Reward == nil || math.Abs(*tr.Reward-want) > 1e-12 {
				t.Fatalf("%s reward = %v, want %v", tr.ID, tr.Reward, want)
			}
			if v, ok := comp(&tr, "env"); !ok || v != win {
				t.Fatalf("%s: env component = %v %v, want %v (the reward before)", tr.ID, v, ok, win)
			}
			if _, ok := comp(&tr, "formula"); !ok {
				t.Fatalf("%s: no formula component: %+v", tr.ID, tr.RewardComponents)
			}
			if tr.Metadata[score.MetaChain] != "env | formula:win - 0.1*illegal + 0*env" {
				t.Fatalf("chain metadata = %q", tr.Metadata[score.MetaChain])
			}
		}
	}
	// Everything but the reward, its components and the chain metadata
	// passes through as it was: messages with token ids and logprobs,
	// metrics, timestamps.
	orig, err := trajectory.ReadFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for gi := range orig {
		for ti := range orig[gi].Trajectories {
			a, b := orig[gi].Trajectories[ti], gs[gi].Trajectories[ti]
			a.Reward, a.RewardComponents, a.Metadata = nil, nil, nil
			b.Reward, b.RewardComponents, b.Metadata = nil, nil, nil
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s changed beyond its reward:\n%+v\n%+v", a.ID, a, b)
			}
		}
	}
	if len(gs[0].Trajectories[0].Messages[2].Logprobs) != 2 {
		t.Fatal("logprobs lost")
	}
	// Scoring the output again with the same chain changes nothing.
	p := filepath.Join(t.TempDir(), "scored.parquet")
	os.WriteFile(p, out1, 0o644)
	out2, _, _, err := run(t, opts, p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out1, out2) {
		t.Fatal("re-scoring the output with the same chain changed it")
	}
	// A different chain keeps the reward before as "previous", and env stays.
	opts.Scorers = []string{"formula:2*win"}
	_, gs3, _, err := run(t, opts, p)
	if err != nil {
		t.Fatal(err)
	}
	tr := gs3[0].Trajectories[1] // reward was -0.1, now 0
	if v, ok := comp(&tr, "previous"); !ok || math.Abs(v+0.1) > 1e-12 || *tr.Reward != 0 {
		t.Fatalf("previous = %v %v, reward %v", v, ok, *tr.Reward)
	}
	if v, ok := comp(&tr, "env"); !ok || v != 0 {
		t.Fatalf("env component lost: %+v", tr.RewardComponents)
	}
}

func TestUsageErrors(t *testing.T) {
	in := writeInput(t, "in.parquet", groups(1, 2))
	cases := map[string]struct {
		scorers []string
		mod     func(*score.Options)
		want    string
	}{
		"bad expression":    {[]string{"formula:win - "}, nil, `--scorer "formula:win -": formula "win -" does not parse`},
		"unknown scorer":    {[]string{"bleu"}, nil, `unknown scorer "bleu"`},
		"empty formula":     {[]string{"formula:"}, nil, "needs an expression"},
		"duplicate":         {[]string{"formula:win", "formula:illegal"}, nil, `both write component "formula"; name one`},
		"env twice":         {[]string{"env", "env"}, nil, `both write component "env": give the environment's reward once`},
		"reserved":          {[]string{"env=formula:win"}, nil, `component name "env" is reserved`},
		"no judge model":    {[]string{"ruler"}, nil, "needs --judge-model"},
		"bad policy":        {[]string{"env"}, func(o *score.Options) { o.OnJudgeError = "ignore" }, "want fail, skip or mark"},
		"missing rubric":    {[]string{"ruler"}, func(o *score.Options) { o.JudgeModel = "m"; o.RubricFile = "/nonexistent/rubric.txt" }, "--rubric"},
		"tokenizer alone":   {[]string{"env"}, func(o *score.Options) { o.JudgeTokenizer = "tok.json" }, "give that too"},
		"context too small": {[]string{"env"}, func(o *score.Options) { o.JudgeContextTokens = 1000 }, "leaves no room for the prompt after the answer's 1024 tokens"},
		"bad tokenizer": {[]string{"ruler"}, func(o *score.Options) {
			o.JudgeModel, o.JudgeContextTokens, o.JudgeTokenizer = "m", 8192, "/nonexistent/tokenizer.json"
		}, "--judge-tokenizer"},
		"bad concurrency": {[]string{"env"}, func(o *score.Options) { o.Concurrency = 0 }, "--concurrency"},
		"judge url without scheme": {[]string{"ruler"}, func(o *score.Options) {
			o.JudgeModel, o.JudgeBaseURL, o.JudgeRetries = "m", "127.0.0.1:8000/v1", 0
		}, "--judge-base-url"},
		"judge url of another scheme": {[]string{"ruler"}, func(o *score.Options) {
			o.JudgeModel, o.JudgeBaseURL, o.JudgeRetries = "m", "ftp://127.0.0.1:1/v1", 0
		}, "--judge-base-url"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			opts := baseOpts(t)
			opts.Scorers = c.scorers
			if c.mod != nil {
				c.mod(&opts)
			}
			_, _, _, err := run(t, opts, in)
			if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a usage error containing %q", err, c.want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	gs := groups(1, 2)
	gs[0].Trajectories[1].Reward = nil
	in := writeInput(t, "in.parquet", gs)
	opts := baseOpts(t)
	opts.Scorers = []string{"env"}
	_, _, _, err := run(t, opts, in)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), `trajectory "g0-t1"`) {
		t.Fatalf("err = %v", err)
	}
	opts.Scorers = []string{"formula:wins"}
	_, _, _, err = run(t, opts, writeInput(t, "in2.parquet", groups(1, 2)))
	if err == nil || !strings.Contains(err.Error(), `no metric or component named "wins"`) {
		t.Fatalf("err = %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	os.WriteFile(bad, []byte("not parquet"), 0o644)
	if _, _, _, err = run(t, opts, bad); !errors.Is(err, stageerr.ErrBadInput) {
		t.Fatalf("not-parquet input: err = %v", err)
	}
}

func rulerOpts(t *testing.T, srv *judgetest.Server) score.Options {
	opts := baseOpts(t)
	opts.Scorers = []string{"ruler", "final=formula:0.5*ruler + 0.5*env"}
	opts.JudgeModel, opts.JudgeBaseURL, opts.JudgeAPIKey = "judge-m", srv.BaseURL(), "sk-test"
	return opts
}

func TestRulerAndCache(t *testing.T) {
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	in1 := writeInput(t, "a.parquet", groups(3, 3))
	gs2 := groups(5, 2)[3:] // g3, g4
	in2 := writeInput(t, "b.parquet", gs2)
	opts := rulerOpts(t, srv)
	opts.PricePrompt, opts.PriceCompletion = 1, 2
	out1, gs, sum, err := run(t, opts, in1, in2)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Hits() != 5 || sum.Scored != 5 || ids(gs) != "g0-t0,g0-t1,g0-t2,g1-t0,g1-t1,g1-t2,g2-t0,g2-t1,g2-t2,g3-t0,g3-t1,g4-t0,g4-t1" {
		t.Fatalf("hits %d, summary %+v, order %s", srv.Hits(), sum, ids(gs))
	}
	u := sum.Judge["judge-m"]
	if u.Calls != 5 || u.CacheHits != 0 || u.CompletionTokens != 10*(3*3+2*2) || u.PromptTokens == 0 {
		t.Fatalf("usage = %+v", u)
	}
	if want := float64(u.PromptTokens)/1e6 + 2*float64(u.CompletionTokens)/1e6; math.Abs(sum.Cost()-want) > 1e-12 || !strings.Contains(sum.String(), "judge judge-m: 5 calls") {
		t.Fatalf("cost %v want %v; %s", sum.Cost(), want, sum)
	}
	tr := gs[0].Trajectories[0]
	if r, _ := comp(&tr, "ruler"); r != 1 || *tr.Reward != 1 { // 0.5*1 + 0.5*1
		t.Fatalf("winner: %+v reward %v", tr.RewardComponents, *tr.Reward)
	}
	tr = gs[0].Trajectories[1]
	if r, _ := comp(&tr, "ruler"); r != 0.25 || *tr.Reward != 0.125 {
		t.Fatalf("loser: %+v reward %v", tr.RewardComponents, *tr.Reward)
	}
	for _, req := range srv.Requests() {
		if strings.Contains(req.User(), "logprob") || strings.Count(req.User(), "Guess the secret") != 1 {
			t.Fatalf("prompt shows logprobs or repeats the shared prefix:\n%s", req.User())
		}
	}
	// The same input again: same bytes, no judge call.
	out2, _, sum2, err := run(t, opts, in1, in2)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Hits() != 5 || !bytes.Equal(out1, out2) || sum2.Judge["judge-m"].CacheHits != 5 || sum2.Judge["judge-m"].PromptTokens != 0 {
		t.Fatalf("second run: hits %d, equal %v, usage %+v", srv.Hits(), bytes.Equal(out1, out2), sum2.Judge)
	}
	// A different rubric is a different question.
	rub := filepath.Join(t.TempDir(), "rubric.txt")
	os.WriteFile(rub, []byte("Fewer guesses are better."), 0o644)
	opts.RubricFile = rub
	if _, _, _, err := run(t, opts, in1); err != nil || srv.Hits() != 8 {
		t.Fatalf("new rubric: hits %d, err %v", srv.Hits(), err)
	}
	if !strings.Contains(srv.Requests()[7].System(), "Fewer guesses are better.") {
		t.Fatal("rubric file not in the system prompt")
	}
}

func TestOnlyMissing(t *testing.T) {
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	opts := rulerOpts(t, srv)
	opts.NoCache = true
	out, _, _, err := run(t, opts, writeInput(t, "old.parquet", groups(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "scored.parquet")
	os.WriteFile(old, out, 0o644)
	fresh := groups(4, 2)[2:]
	fresh[1].Trajectories[0].Reward = nil
	newer := writeInput(t, "new.parquet", fresh)
	opts.OnlyMissing = true
	// Without env: g3-t0 has no environment reward.
	opts.Scorers = []string{"ruler", "final=formula:2*ruler"}
	_, gs, sum, err := run(t, opts, old, newer)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Hits() != 4 || sum.Passed != 2 || sum.Scored != 2 || ids(gs) != "g0-t0,g0-t1,g1-t0,g1-t1,g2-t0,g2-t1,g3-t0,g3-t1" {
		t.Fatalf("hits %d (want 2+2), summary %+v, order %s", srv.Hits(), sum, ids(gs))
	}
	for _, g := range gs {
		for _, tr := range g.Trajectories {
			if _, ok := comp(&tr, "final"); !ok {
				t.Fatalf("%s not scored: %+v", tr.ID, tr.RewardComponents)
			}
		}
	}
}

// script answers badly for any group whose prompt contains "Scenario g1".
func badForG1(bad judgetest.Reply) func(int, judgetest.Request) judgetest.Reply {
	good := judgetest.KeywordJudge("WIN")
	return func(n int, r judgetest.Request) judgetest.Reply {
		if strings.Contains(r.User(), "Scenario g1") {
			return bad
		}
		return good(n, r)
	}
}

func TestOnJudgeError(t *testing.T) {
	failures := map[string]judgetest.Reply{
		"wrong count":  {Content: judgetest.Answer([]string{"1"}, []float64{1})},
		"out of range": {Content: judgetest.Answer([]string{"1", "2"}, []float64{1, 7})},
		"non-json":     {Content: "Trajectory 1 wins."},
		"http 500":     {Status: 500},
		"timeout":      {Delay: 10 * time.Second},
	}
	for fname, bad := range failures {
		for _, policy := range []string{score.PolicyFail, score.PolicySkip, score.PolicyMark} {
			t.Run(fname+"/"+policy, func(t *testing.T) {
				// Each case has its own judge server and files; in parallel,
				// the timeout cases wait their judge timeouts together.
				t.Parallel()
				srv := judgetest.NewServer(t, badForG1(bad))
				opts := rulerOpts(t, srv)
				opts.OnJudgeError, opts.JudgeRetries = policy, 1
				if fname == "timeout" {
					opts.JudgeTimeout = time.Second // long enough for the good groups on a loaded machine
				}
				_, gs, sum, err := run(t, opts, writeInput(t, "in.parquet", groups(3, 2)))
				// g0 and g2: one call each; g1: 2 attempts. Under fail,
				// g2 may be cancelled before its call.
				switch policy {
				case score.PolicyFail:
					if !errors.Is(err, judge.ErrFailed) || !strings.Contains(err.Error(), `group "g1"`) {
						t.Fatalf("err = %v", err)
					}
					return
				case score.PolicySkip:
					if err != nil || sum.Skipped != 1 || ids(gs) != "g0-t0,g0-t1,g2-t0,g2-t1" {
						t.Fatalf("err %v, summary %+v, rows %s", err, sum, ids(gs))
					}
				case score.PolicyMark:
					if err != nil || sum.Marked != 1 || ids(gs) != "g0-t0,g0-t1,g1-t0,g1-t1,g2-t0,g2-t1" {
						t.Fatalf("err %v, summary %+v, rows %s", err, sum, ids(gs))
					}
					m := gs[1].Trajectories[0]
					if !strings.HasPrefix(m.Error, "hone-score: scorer ruler: ") || *m.Reward != 1 || len(m.RewardComponents) != 0 {
						t.Fatalf("marked row: error %q, reward %v, comps %+v", m.Error, *m.Reward, m.RewardComponents)
					}
				}
				if srv.Hits() != 4 {
					t.Fatalf("hits = %d, want 1+2+1", srv.Hits())
				}
				if u := sum.Judge["judge-m"]; u.Calls != 4 || u.Retries != 1 {
					t.Fatalf("usage = %+v", u)
				}
			})
		}
	}
}

// A group of one is scored on an absolute scale with one judge call, as
// any other group; the others stay relative.
func TestGroupOfOne(t *testing.T) {
	gs := groups(3, 2)
	gs[1].Trajectories = gs[1].Trajectories[:1]
	in := writeInput(t, "in.parquet", gs)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	opts := rulerOpts(t, srv)
	opts.NoCache, opts.Concurrency = true, 1
	_, out, sum, err := run(t, opts, in)
	if err != nil || sum.Scored != 3 || srv.Hits() != 3 || ids(out) != "g0-t0,g0-t1,g1-t0,g2-t0,g2-t1" {
		t.Fatalf("err %v, summary %+v, rows %s, hits %d", err, sum, ids(out), srv.Hits())
	}
	if r, _ := comp(&out[1].Trajectories[0], "ruler"); r != 1 || out[1].Trajectories[0].Error != "" {
		t.Fatalf("group of one: %+v", out[1].Trajectories[0])
	}
	for i, req := range srv.Requests() {
		if abs := strings.Contains(req.System(), "absolute scale"); abs != (i == 1) {
			t.Fatalf("request %d: absolute scale %v:\n%s", i, abs, req.System())
		}
	}
}

// A marked group is retried by the next --only-missing run, and its mark
// removed once it is scored.
func TestMarkThenRescore(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	good := judgetest.KeywordJudge("WIN")
	srv := judgetest.NewServer(t, func(n int, r judgetest.Request) judgetest.Reply {
		if broken.Load() {
			return judgetest.Reply{Status: 503}
		}
		return good(n, r)
	})
	opts := rulerOpts(t, srv)
	opts.OnJudgeError, opts.JudgeRetries = score.PolicyMark, 0
	out, _, _, err := run(t, opts, writeInput(t, "in.parquet", groups(1, 2)))
	if !errors.Is(err, score.ErrJudgeFailedAll) { // the one group failed; its output is written
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "marked.parquet")
	os.WriteFile(p, out, 0o644)
	broken.Store(false)
	opts.OnlyMissing = true
	_, gs, sum, err := run(t, opts, p)
	if err != nil || sum.Scored != 1 || gs[0].Trajectories[0].Error != "" {
		t.Fatalf("err %v, summary %+v, error %q", err, sum, gs[0].Trajectories[0].Error)
	}
}

// Groups keep their order whatever order the judge answers in. The judge
// holds each even group's answer until the next group has answered, so the
// answers come out of order every run, and the test checks that they did.
// (Not on synctest's clock: the Parquet codec's pooled zstd decoders would
// then belong to the bubble and fail the next test that reads a file.)
func TestOrderUnderConcurrency(t *testing.T) {
	const n = 8
	var answeredCh [n]chan struct{}
	for i := range answeredCh {
		answeredCh[i] = make(chan struct{})
	}
	var calls atomic.Int32
	var mu sync.Mutex
	var answered []int
	f := &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) {
		calls.Add(1)
		i := strings.Index(r.User, "Scenario g")
		var g int
		fmt.Sscanf(r.User[i+len("Scenario g"):], "%d", &g)
		// Groups are handed to the workers in order, so g+1 is in flight
		// or next in line while g waits: at most half the workers wait.
		if g%2 == 0 {
			select {
			case <-answeredCh[g+1]:
			case <-time.After(30 * time.Second):
				return "", fmt.Errorf("group g%d never answered", g+1)
			}
		}
		mu.Lock()
		answered = append(answered, g)
		mu.Unlock()
		close(answeredCh[g])
		return judgetest.Answer(r.IDs, []float64{1, 0}), nil
	}}
	opts := baseOpts(t)
	opts.Scorers, opts.JudgeModel, opts.Judge, opts.Concurrency, opts.NoCache = []string{"ruler"}, "fake", f, 4, true
	gs := groups(n, 2)
	_, out, _, err := run(t, opts, writeInput(t, "in.parquet", gs))
	if err != nil {
		t.Fatal(err)
	}
	if slices.IsSorted(answered) {
		t.Fatalf("the judge answered in order %v; the test meant it not to", answered)
	}
	if ids(out) != ids(gs) || calls.Load() != n {
		t.Fatalf("order %s, want %s; calls %d", ids(out), ids(gs), calls.Load())
	}
	for _, g := range out {
		if *g.Trajectories[0].Reward != 1 || *g.Trajectories[1].Reward != 0 {
			t.Fatalf("group %s rewards wrong", g.ID)
		}
	}
}

// Cancelling keeps the groups finished before the stop, whole.
func TestInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		if n > 0 {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return judgetest.Answer(r.IDs, []float64{1, 0}), nil
	}}
	opts := baseOpts(t)
	opts.Scorers, opts.JudgeModel, opts.Judge, opts.Concurrency, opts.NoCache = []string{"ruler"}, "fake", f, 1, true
	opts.Progress = func(groups, rows int64) { cancel() }
	var out bytes.Buffer
	opts.Inputs, opts.Out = fileset.Files(writeInput(t, "in.parquet", groups(4, 2))), &out
	sum, err := scoreRun(ctx, opts)
	if !errors.Is(err, stageerr.ErrInterrupted) || sum.Written != 2 {
		t.Fatalf("err %v, summary %+v", err, sum)
	}
	p := filepath.Join(t.TempDir(), "partial.parquet")
	os.WriteFile(p, out.Bytes(), 0o644)
	gs, err := trajectory.ReadFile(context.Background(), p)
	if err != nil || ids(gs) != "g0-t0,g0-t1" {
		t.Fatalf("partial output: %v, %s", err, ids(gs))
	}
}

// TestInterruptKeepsFinished: a group that finished before the stop is
// written even when the writer reaches it after the stop. Group 1
// finishes while group 0 is still with the judge (group 2's call, which
// needs a free worker, shows that group 1's is done); the run is stopped
// as soon as group 0 is written.
func TestInterruptKeepsFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g2asked := make(chan struct{})
	var once sync.Once
	f := &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) {
		switch {
		case strings.Contains(r.User, "Scenario g0"):
			<-g2asked
		case strings.Contains(r.User, "Scenario g1"):
		default:
			once.Do(func() { close(g2asked) })
			<-ctx.Done()
			return "", ctx.Err()
		}
		return judgetest.Answer(r.IDs, []float64{1, 0}), nil
	}}
	opts := baseOpts(t)
	opts.Scorers, opts.JudgeModel, opts.Judge, opts.Concurrency, opts.NoCache = []string{"ruler"}, "fake", f, 2, true
	opts.Progress = func(groups, rows int64) { cancel() }
	var out bytes.Buffer
	opts.Inputs, opts.Out = fileset.Files(writeInput(t, "in.parquet", groups(4, 2))), &out
	sum, err := scoreRun(ctx, opts)
	if !errors.Is(err, stageerr.ErrInterrupted) || sum.Written != 4 {
		t.Fatalf("err %v, summary %+v; want groups 0 and 1 written", err, sum)
	}
	p := filepath.Join(t.TempDir(), "partial.parquet")
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	gs, err := trajectory.ReadFile(context.Background(), p)
	if err != nil || ids(gs) != "g0-t0,g0-t1,g1-t0,g1-t1" {
		t.Fatalf("partial output: %v, %s", err, ids(gs))
	}
}

func TestParseSpec(t *testing.T) {
	cases := map[string]score.Spec{
		"env":                   {Name: "env", Kind: "env"},
		"ruler":                 {Name: "ruler", Kind: "ruler"},
		"judge=ruler":           {Name: "judge", Kind: "ruler"},
		"formula:a==b ? 1 : 0":  {Name: "formula", Kind: "formula", Arg: "a==b ? 1 : 0"},
		"x=formula:max(a, b)":   {Name: "x", Kind: "formula", Arg: "max(a, b)"},
		" formula : win - 0.1 ": {Name: "formula", Kind: "formula", Arg: "win - 0.1"},
	}
	for in, want := range cases {
		got, err := score.ParseSpec(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
}

// FuzzParseSpec: no --scorer value makes ParseSpec panic, and an accepted
// one names a known kind.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"env", "ruler", "x=ruler", "formula:a", "y=formula:a:b", "=", ":", "env=env", "formula"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := score.ParseSpec(v)
		if err != nil {
			return
		}
		switch s.Kind {
		case "env", "formula", "ruler":
		default:
			t.Fatalf("ParseSpec(%q) accepted kind %q", v, s.Kind)
		}
	})
}

// --judge-context-tokens cuts each prompt to what the context leaves
// after the answer's --judge-max-tokens and the template margin; a group
// that cannot fit at all is a judge failure, under --on-judge-error.
func TestJudgeContextTokens(t *testing.T) {
	gs := groups(2, 2)
	gs[0].Trajectories[0].Messages[2].Content = "guess 42: WIN " + strings.Repeat("because the clues add up. ", 240)
	in := writeInput(t, "in.parquet", gs)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	opts := rulerOpts(t, srv)
	opts.NoCache, opts.Concurrency = true, 1
	opts.JudgeMaxTokens = 200
	const prompt = 1000
	opts.JudgeContextTokens = prompt + 200 + score.TemplateMargin
	var log bytes.Buffer // at info level: the run's one line on cuts shows there
	opts.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, out, sum, err := run(t, opts, in)
	if err != nil || sum.Scored != 2 {
		t.Fatalf("err %v, summary %+v", err, sum)
	}
	if sum.Ruler.Prompts != 2 || sum.Ruler.Cut != 1 || sum.Ruler.Texts < 1 ||
		!strings.Contains(sum.String(), "; ruler: 1 of 2 prompts cut to fit the judge's context") {
		t.Errorf("summary %+v: %s", sum.Ruler, sum)
	}
	if lines := strings.Count(log.String(), "prompts cut to fit"); lines != 1 ||
		!strings.Contains(log.String(), fmt.Sprintf("prompts=2 cut=1 texts_cut=%d budget_tokens=%d", sum.Ruler.Texts, prompt)) {
		t.Errorf("want one info line on the cuts, got %d:\n%s", lines, log.String())
	}
	opts.Log = nil
	est := ruler.Estimate{}
	reqs := srv.Requests()
	if n := est.Count(reqs[0].System()) + est.Count(reqs[0].User()); n > prompt || !strings.Contains(reqs[0].User(), "tokens cut to fit the judge's context") {
		t.Fatalf("group g0: %d prompt tokens for a budget of %d:\n%s", n, prompt, reqs[0].User())
	}
	if strings.Contains(reqs[1].User(), "tokens cut") || strings.Contains(reqs[1].System(), "shortened") {
		t.Fatalf("group g1 fits and was cut:\n%s", reqs[1].User())
	}
	if r, _ := comp(&out[0].Trajectories[0], "ruler"); r != 1 {
		t.Fatalf("the cut winner scored %v", r)
	}

	opts.JudgeContextTokens = 300 + 200 + score.TemplateMargin // less than the system prompt
	opts.OnJudgeError = score.PolicyMark
	_, out, sum, err = run(t, opts, in)
	// Every group marked: the rows are written, and the run still fails.
	if !errors.Is(err, score.ErrJudgeFailedAll) || sum.Marked != 2 || !strings.Contains(out[0].Trajectories[0].Error, "does not fit the judge's context") || srv.Hits() != 2 {
		t.Fatalf("err %v, summary %+v, hits %d", err, sum, srv.Hits())
	}
	opts.OnJudgeError = score.PolicyFail
	if _, _, _, err = run(t, opts, in); err == nil || errors.Is(err, stageerr.ErrUsage) || errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "budget of 300") {
		t.Fatalf("fail: err = %v", err)
	}
}

// A group's own metadata and metrics (schema v2) pass through scoring as
// they were read.
func TestGroupFieldsPassThrough(t *testing.T) {
	gs := groups(2, 2)
	gs[0].Metadata = map[string]string{"scenario": "s0"}
	gs[0].Metrics = map[string]float64{"difficulty": 3}
	opts := baseOpts(t)
	_, out, _, err := run(t, opts, writeInput(t, "in.parquet", gs))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Metadata["scenario"] != "s0" || out[0].Metrics["difficulty"] != 3 || len(out[1].Metadata) != 0 {
		t.Fatalf("group fields after scoring: %+v %+v; %+v", out[0].Metadata, out[0].Metrics, out[1].Metadata)
	}
}

// TestJudgeCacheKeyedByServer: a verdict cached from one judge server is
// not served to a run that asks another server for a model of the same
// name (a local vLLM "qwen3" and a remote one are different judges),
// while a base URL that differs only by its trailing slash is the same
// server.
func TestJudgeCacheKeyedByServer(t *testing.T) {
	in := writeInput(t, "in.parquet", groups(2, 2))
	a := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	b := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	opts := rulerOpts(t, a)
	if _, _, _, err := run(t, opts, in); err != nil || a.Hits() != 2 {
		t.Fatalf("first run: hits %d, err %v", a.Hits(), err)
	}
	opts.JudgeBaseURL = b.BaseURL()
	if _, _, sum, err := run(t, opts, in); err != nil || b.Hits() != 2 {
		t.Fatalf("same model on another server: its judge was called %d times, want 2 (usage %+v, err %v)", b.Hits(), sum.Judge, err)
	}
	opts.JudgeBaseURL = b.BaseURL() + "/"
	if _, _, sum, err := run(t, opts, in); err != nil || b.Hits() != 2 || sum.Judge["judge-m"].CacheHits != 2 {
		t.Fatalf("the same server with a trailing slash: hits %d, usage %+v, err %v; want the cache's verdicts", b.Hits(), sum.Judge, err)
	}
}

// TestIdenticalGroupsOneWarning: groups whose trajectories are all the
// same attempt are counted in one warning line for the run, naming the
// first few, not warned about one line each (a collapsed policy makes
// hundreds); each group stays in the debug log.
func TestIdenticalGroupsOneWarning(t *testing.T) {
	var gs []trajectory.Group
	for g := range 6 {
		id := fmt.Sprintf("g%d", g)
		grp := trajectory.Group{ID: id}
		for i := range 3 {
			answer := "guess 42: WIN"
			if g == 5 {
				answer = fmt.Sprintf("guess %d", i) // the one group with different attempts
			}
			grp.Trajectories = append(grp.Trajectories, episode(id, i, answer, trajectory.Float64(1), 1, 0))
		}
		gs = append(gs, grp)
	}
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	opts := rulerOpts(t, srv)
	opts.NoCache, opts.Concurrency = true, 1
	var logged bytes.Buffer
	opts.Log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, _, _, err := run(t, opts, writeInput(t, "in.parquet", gs)); err != nil {
		t.Fatal(err)
	}
	var warns, debug []string
	for _, line := range strings.Split(logged.String(), "\n") {
		switch {
		case strings.Contains(line, "level=WARN"):
			warns = append(warns, line)
		case strings.Contains(line, "level=DEBUG") && strings.Contains(line, "identical"):
			debug = append(debug, line)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "groups=5") || !strings.Contains(warns[0], "first=g0,g1,g2") {
		t.Fatalf("%d warnings, want one counting 5 identical groups and naming g0,g1,g2:\n%s", len(warns), logged.String())
	}
	if len(debug) != 5 {
		t.Fatalf("%d debug lines for identical groups, want 5:\n%s", len(debug), logged.String())
	}
}
