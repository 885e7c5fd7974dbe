package tictactoe_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/tictactoe"
	"github.com/hone-rl/hone/format/trajectory"
)

func TestSuite(t *testing.T) {
	for _, opp := range []string{"random", "greedy", "minimax"} {
		t.Run(opp, func(t *testing.T) {
			e, err := tictactoe.New(opp)
			if err != nil {
				t.Fatal(err)
			}
			envtest.Suite(t, e, envtest.SuiteOptions{Scenarios: 6, MaxTurns: 5})
		})
	}
}

// play runs n games of policy against opponent and sums the metrics.
func play(t *testing.T, policy, opponent string, n int) map[string]float64 {
	e, _ := tictactoe.New(opponent)
	sum := map[string]float64{}
	for i := range n {
		p, _ := json.Marshal(tictactoe.Payload{Opponent: opponent, AgentFirst: i%2 == 0})
		ep, err := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: p}, int64(i))
		if err != nil {
			t.Fatal(err)
		}
		pol, _ := e.Policy(policy, int64(i))
		res, err := env.Play(context.Background(), ep, pol, 9)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range res.Outcome.Metrics {
			sum[k] += v
		}
	}
	return sum
}

func TestStrength(t *testing.T) {
	if m := play(t, "minimax", "minimax", 40); m["draw"] != 40 {
		t.Errorf("minimax vs minimax: %v, want 40 draws", m)
	}
	if m := play(t, "random", "minimax", 60); m["win"] != 0 || m["loss"] < 20 {
		t.Errorf("random vs minimax: %v, want no wins and many losses", m)
	}
	if m := play(t, "minimax", "random", 60); m["loss"] != 0 || m["win"] < 40 {
		t.Errorf("minimax vs random: %v, want no losses, mostly wins", m)
	}
}

func TestIllegalMove(t *testing.T) {
	e, _ := tictactoe.New("random")
	ep, _ := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"agent_first":true}`)}, 1)
	obs, _ := ep.Reset(context.Background())
	if obs.Messages[0].Content != "123\n456\n789\nyour move (x, 1-9)" {
		t.Errorf("opening %q", obs.Messages[0].Content)
	}
	moves := []string{"5", "5"}
	i := 0
	res, err := env.Play(context.Background(), ep, env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
		i++
		return env.Assistant(moves[i-1]), nil
	}), 9)
	if err != nil || res.Outcome.Reward != -1 || res.Outcome.Metrics["illegal"] != 1 || res.Outcome.Metrics["moves"] != 1 {
		t.Errorf("occupied cell: %v %+v", err, res.Outcome)
	}
}

// TestMoveIsOneDigit: docs/games.md has the agent answer a cell number
// 1–9 and calls anything else illegal; strconv.Atoi took "+5" and "05" for
// cell 5. Only a digit 1-9, with surrounding white space, is a move.
func TestMoveIsOneDigit(t *testing.T) {
	e, _ := tictactoe.New("random")
	for _, tc := range []struct {
		answer string
		legal  bool
	}{{"5", true}, {" 5\n", true}, {"1", true}, {"9", true}, {"+5", false}, {"05", false}, {"-5", false}, {"0", false}, {"10", false}, {"5.", false}, {"５", false}, {"", false}} {
		ep, _ := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"agent_first":true}`)}, 1)
		if _, err := ep.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := ep.Step(context.Background(), env.Turn{Message: env.Assistant(tc.answer)}); err != nil {
			t.Fatal(err)
		}
		if m := ep.Outcome().Metrics; (m["illegal"] == 0) != tc.legal || tc.legal && m["moves"] != 1 {
			t.Errorf("answer %q: metrics %v, want legal %v", tc.answer, m, tc.legal)
		}
	}
}

// TestTeacherNeverBlocks: against the greedy opponent, which takes every
// win it is given, the teacher (wins when it can, never blocks) loses
// often and the blocker (the teacher plus blocks) seldom; the block
// counters tell them apart.
func TestTeacherNeverBlocks(t *testing.T) {
	const n = 400
	teacher, blocker := play(t, "teacher", "greedy", n), play(t, "blocker", "greedy", n)
	if teacher["threats"] < 100 {
		t.Fatalf("teacher vs greedy: %v, want many threats", teacher)
	}
	// A random move takes one of the free cells, so about a quarter of the
	// teacher's threats are blocked by chance, never most.
	if r := teacher["blocks"] / teacher["threats"]; r > 0.5 {
		t.Errorf("teacher block rate %.2f (%v), want a chance rate", r, teacher)
	}
	if blocker["blocks"] != blocker["threats"] {
		t.Errorf("blocker vs greedy: %v, want every threat blocked", blocker)
	}
	tw, bw := teacher["win_or_draw"]/n, blocker["win_or_draw"]/n
	if bw-tw < 0.2 {
		t.Errorf("win or draw vs greedy: teacher %.2f, blocker %.2f, want the blocker ≥ 20 points ahead", tw, bw)
	}
	if teacher["win"]+teacher["draw"] != teacher["win_or_draw"] || teacher["win_or_draw"]+teacher["loss"] != n {
		t.Errorf("teacher outcomes %v do not add up to %d games", teacher, n)
	}
	t.Logf("vs greedy, win or draw: teacher %.2f (block rate %.2f), blocker %.2f", tw, teacher["blocks"]/teacher["threats"], bw)
}

// TestGreedyOpponentTakesWins: against the greedy opponent a missed block
// loses at once, and the counters stay consistent.
func TestGreedyOpponentTakesWins(t *testing.T) {
	e, _ := tictactoe.New("greedy")
	for seed := range int64(50) {
		ep, _ := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"agent_first":false,"opponent":"greedy"}`)}, seed)
		pol, _ := e.Policy("random", seed)
		res, err := env.Play(context.Background(), ep, pol, 9)
		if err != nil {
			t.Fatal(err)
		}
		m := res.Outcome.Metrics
		if m["blocks"] > m["threats"] || m["threats"] > m["moves"] {
			t.Errorf("seed %d: %v: blocks ≤ threats ≤ moves broken", seed, m)
		}
		// Against greedy, an unblocked threat loses the game at once.
		if m["threats"] > m["blocks"] && m["loss"] != 1 {
			t.Errorf("seed %d: %v: a missed block did not lose", seed, m)
		}
	}
}

// TestThreatStart: with ThreatStart 1 every scenario starts from a board
// where o threatens one line and x, to move, cannot win; the blocker saves
// nearly all of them and the teacher few. With 0 no scenario has a start
// board.
func TestThreatStart(t *testing.T) {
	ctx := context.Background()
	plain, _ := tictactoe.New("greedy")
	before, err := plain.Scenarios(ctx, 7, 50)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := tictactoe.New("greedy")
	e.ThreatStart = 1
	scs, err := e.Scenarios(ctx, 7, 50)
	if err != nil {
		t.Fatal(err)
	}
	saved := map[string]float64{}
	for i, sc := range scs {
		var p, q tictactoe.Payload
		if err := json.Unmarshal(sc.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(before[i].Payload, &q); err != nil || q.Start != "" {
			t.Fatalf("scenario %d without ThreatStart: %+v, %v; want no start board", i, q, err)
		}
		if len(p.Start) != 9 {
			t.Fatalf("scenario %d: start %q, want a board", i, p.Start)
		}
		for _, policy := range []string{"teacher", "blocker"} {
			ep, err := e.NewEpisode(ctx, sc, int64(i))
			if err != nil {
				t.Fatal(err)
			}
			obs, _ := ep.Reset(ctx)
			for k := range 9 {
				want := byte('1' + k)
				if p.Start[k] != '.' {
					want = p.Start[k]
				}
				if got := obs.Messages[0].Content[k+k/3]; got != want {
					t.Fatalf("scenario %d, start %q: opening board %q, cell %d is %q", i, p.Start, obs.Messages[0].Content, k+1, got)
				}
			}
			pol, _ := e.Policy(policy, int64(i))
			res, err := env.Play(ctx, ep, pol, 9)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome.Metrics["threats"] < 1 {
				t.Errorf("scenario %d (%s), start %q: %v, want the first turn to face a threat", i, policy, p.Start, res.Outcome.Metrics)
			}
			saved[policy] += res.Outcome.Metrics["win_or_draw"]
		}
	}
	if saved["blocker"] < 40 || saved["teacher"] > 25 {
		t.Errorf("win or draw of 50 threat starts: %v, want the blocker ≥ 40 and the teacher ≤ 25", saved)
	}
	e.ThreatStart = 1.5
	if _, err := e.Scenarios(ctx, 7, 1); err == nil {
		t.Error("ThreatStart 1.5: no error")
	}
}

// TestBadStart: a start board that is not a game in progress with x to
// move is refused, naming the scenario.
func TestBadStart(t *testing.T) {
	e, _ := tictactoe.New("greedy")
	for _, p := range []string{
		`{"start":"xxo","agent_first":true}`,        // too short
		`{"start":"x..o....q","agent_first":true}`,  // not a cell
		`{"start":"x........","agent_first":true}`,  // o to move
		`{"start":"o........","agent_first":true}`,  // o moved first
		`{"start":"xxxoo....","agent_first":true}`,  // over
		`{"start":"ox.......","agent_first":false}`, // o to move again
	} {
		_, err := e.NewEpisode(context.Background(), env.Scenario{ID: "s9", Payload: []byte(p)}, 1)
		if err == nil || !strings.Contains(err.Error(), "scenario s9: start") {
			t.Errorf("payload %s: %v, want an error naming scenario s9's start", p, err)
		}
	}
	ep, err := e.NewEpisode(context.Background(), env.Scenario{ID: "s", Payload: []byte(`{"start":"o........","agent_first":false}`)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	obs, _ := ep.Reset(context.Background())
	if got := obs.Messages[0].Content; got != "o23\n456\n789\nyour move (x, 1-9)" {
		t.Errorf("opening %q", got)
	}
}
