package score_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/score"
	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

const refused = `turn 1: policy: Post "http://127.0.0.1:9/v1/chat/completions": dial tcp 127.0.0.1:9: connect: connection refused`

// failedEpisode is a row as hone-collect writes an episode whose model
// call failed: the opening messages, the error, no reward, no metrics.
func failedEpisode(group string, i int) trajectory.Trajectory {
	t := episode(group, i, "", nil, 0, 0)
	t.Messages = t.Messages[:2]
	t.Metrics = nil
	t.Error = refused
	return t
}

// erroredInput is 8 good groups of 4 (32 rows), a group whose every
// episode failed ("dead"), and a group of 3 good rows around a failed one
// ("mixed").
func erroredInput(t *testing.T) string {
	gs := groups(8, 4)
	dead := trajectory.Group{ID: "dead"}
	for i := range 4 {
		dead.Trajectories = append(dead.Trajectories, failedEpisode("dead", i))
	}
	mixed := groups(1, 4)[0]
	mixed.ID = "mixed"
	for i := range mixed.Trajectories {
		tr := &mixed.Trajectories[i]
		tr.GroupID, tr.ScenarioID, tr.ID = "mixed", "mixed", fmt.Sprintf("mixed-t%d", i)
	}
	mixed.Trajectories[1] = failedEpisode("mixed", 1)
	return writeInput(t, "in.parquet", append(gs, dead, mixed))
}

// keywordFake is a fake judge that scores 1 for "WIN", 0.25 otherwise,
// and fails the test if a failed episode reaches it.
func keywordFake(t *testing.T) *judge.Fake {
	return &judge.Fake{Answer: func(_ int, req judge.Request) (string, error) {
		if strings.Contains(req.User, "connection refused") {
			t.Errorf("a failed episode reached the judge:\n%s", req.User)
		}
		ids, text := judgetest.Blocks(req.User)
		scores := make([]float64, len(ids))
		for i, id := range ids {
			scores[i] = 0.25
			if strings.Contains(text[id], "WIN") {
				scores[i] = 1
			}
		}
		return judgetest.Answer(ids, scores), nil
	}}
}

// checkErroredPassedThrough checks that every failed episode of out is
// the row that was read, untouched.
func checkErroredPassedThrough(t *testing.T, in []trajectory.Group, out []trajectory.Group) {
	t.Helper()
	read := map[string]trajectory.Trajectory{}
	for _, g := range in {
		for _, tr := range g.Trajectories {
			read[tr.ID] = tr
		}
	}
	for _, g := range out {
		for _, tr := range g.Trajectories {
			if tr.Error != refused {
				continue
			}
			if !reflect.DeepEqual(tr, read[tr.ID]) {
				t.Errorf("%s: failed episode changed:\n got %+v\nwant %+v", tr.ID, tr, read[tr.ID])
			}
		}
	}
}

// Rows whose episode failed pass through unscored, counted, under every
// scorer; the other rows of their groups are scored without them.
func TestErroredRowsPassThrough(t *testing.T) {
	in := erroredInput(t)
	read := readInput(t, in)
	for _, chain := range [][]string{
		{"env"},
		{"formula:win - 0.1*illegal"},
		{"ruler"},
		{"env", "ruler", "final=formula:0.5*ruler + 0.5*env - 0.1*illegal"},
	} {
		t.Run(strings.Join(chain, " | "), func(t *testing.T) {
			opts := baseOpts(t)
			opts.Scorers, opts.NoCache, opts.JudgeModel = chain, true, "judge-m"
			fake := keywordFake(t)
			opts.Judge = fake
			_, out, sum, err := run(t, opts, in)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Groups != 10 || sum.Rows != 40 || sum.Scored != 9 || sum.Errored != 1 || sum.Written != 40 || sum.ErroredRows != 5 {
				t.Fatalf("summary %+v", sum)
			}
			if s := sum.String(); !strings.Contains(s, "10 groups (40 rows) read: 9 scored, 0 passed through, 0 skipped, 0 marked, 1 with every row errored; 40 rows written, 5 of them errored in collection and passed through unscored") {
				t.Errorf("summary line %q", s)
			}
			checkErroredPassedThrough(t, read, out)
			mixed := out[9]
			for i, tr := range mixed.Trajectories {
				if i == 1 {
					continue
				}
				if tr.Reward == nil || tr.Metadata[score.MetaChain] == "" || len(tr.RewardComponents) == 0 {
					t.Errorf("mixed row %d not scored: %+v", i, tr)
				}
			}
			if slicesContain(chain, "ruler") {
				calls := fake.Calls()
				if len(calls) != 9 {
					t.Fatalf("%d judge calls, want 9 (none for the dead group)", len(calls))
				}
				for _, c := range calls {
					if strings.Contains(c.User, "Scenario mixed") && len(c.IDs) != 3 {
						t.Errorf("mixed group judged with %d trajectories, want 3", len(c.IDs))
					}
				}
			}
		})
	}
}

// slicesContain reports whether a scorer spec in s starts with v.
func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if strings.HasPrefix(x, v) {
			return true
		}
	}
	return false
}

func readInput(t *testing.T, path string) []trajectory.Group {
	t.Helper()
	gs, err := trajectory.ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// --on-judge-error does what its help says with a judge that always
// fails, and leaves failed episodes alone: fail stops the run (a judge
// failure, exit 1 — not bad input); skip drops the judged groups, counted,
// and passes the dead group through; mark writes the judged groups as they
// were read with the reason in the error of each row that was judged. With
// skip and mark the output is complete, but as the judge failed every
// group the run ends with ErrJudgeFailedAll (exit 1).
func TestOnJudgeErrorWithErroredRows(t *testing.T) {
	in := erroredInput(t)
	down := errors.New("HTTP 503: judge overloaded")
	for _, policy := range []string{score.PolicyFail, score.PolicySkip, score.PolicyMark} {
		t.Run(policy, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			opts := baseOpts(t)
			opts.Scorers, opts.NoCache, opts.JudgeModel, opts.OnJudgeError, opts.JudgeRetries = []string{"env", "ruler"}, true, "judge-m", policy, 1
			opts.Judge = judge.Func(func(ctx context.Context, req judge.Request) (judge.Verdict, error) {
				mu.Lock()
				calls++
				mu.Unlock()
				return judge.Verdict{}, &judge.Error{Kind: "http", Retryable: true, Err: down}
			})
			_, out, sum, err := run(t, opts, in)
			switch policy {
			case score.PolicyFail:
				if !errors.Is(err, judge.ErrFailed) || errors.Is(err, stageerr.ErrBadInput) || errors.Is(err, stageerr.ErrUsage) ||
					!strings.Contains(err.Error(), "judge overloaded") || !strings.Contains(err.Error(), "--on-judge-error fail") {
					t.Fatalf("err = %v", err)
				}
				return
			case score.PolicySkip:
				if !errors.Is(err, score.ErrJudgeFailedAll) || sum.Skipped != 9 || sum.Errored != 1 || sum.Written != 4 || sum.ErroredRows != 4 || len(out) != 1 || out[0].ID != "dead" {
					t.Fatalf("err %v, summary %+v, %d groups", err, sum, len(out))
				}
			case score.PolicyMark:
				if !errors.Is(err, score.ErrJudgeFailedAll) || sum.Marked != 9 || sum.Errored != 1 || sum.Written != 40 || sum.ErroredRows != 5 || len(out) != 10 {
					t.Fatalf("err %v, summary %+v, %d groups", err, sum, len(out))
				}
				for _, g := range out[:8] {
					for _, tr := range g.Trajectories {
						if !strings.HasPrefix(tr.Error, "hone-score: scorer ruler: ") || !strings.Contains(tr.Error, "judge overloaded") ||
							tr.Reward == nil || len(tr.RewardComponents) != 0 || tr.Metadata[score.MetaChain] != "" {
							t.Fatalf("marked row %s: error %q, reward %v, components %+v", tr.ID, tr.Error, tr.Reward, tr.RewardComponents)
						}
					}
				}
				m := out[9].Trajectories
				if !strings.Contains(m[0].Error, "1 of the group's 4 rows failed in collection") || m[1].Error != refused {
					t.Fatalf("mixed group: errors %q, %q", m[0].Error, m[1].Error)
				}
				checkErroredPassedThrough(t, readInput(t, in), out)
			}
			if calls != 2*9 {
				t.Errorf("%d judge calls, want 2 per judged group (1 retry), none for the dead group", calls)
			}
		})
	}
}

// A group left with one row by failed episodes is scored as a group of
// one, on an absolute scale; the failed row passes through.
func TestRulerGroupLeftWithOne(t *testing.T) {
	g := groups(1, 2)[0]
	g.Trajectories[1] = failedEpisode("g0", 1)
	in := writeInput(t, "in.parquet", []trajectory.Group{g})
	opts := baseOpts(t)
	opts.Scorers, opts.NoCache, opts.JudgeModel = []string{"ruler"}, true, "judge-m"
	f := keywordFake(t)
	opts.Judge = f
	_, out, sum, err := run(t, opts, in)
	if err != nil || sum.Scored != 1 || sum.ErroredRows != 1 || out[0].Trajectories[1].Error != refused {
		t.Fatalf("err %v, summary %+v", err, sum)
	}
	if r, _ := comp(&out[0].Trajectories[0], "ruler"); r != 1 || !strings.Contains(f.Calls()[0].System, "absolute scale") {
		t.Fatalf("row %+v, system:\n%s", out[0].Trajectories[0], f.Calls()[0].System)
	}
}
