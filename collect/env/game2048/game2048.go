// Package game2048 is the 2048 sliding-tile game. The user message shows
// the 4×4 board (numbers, "." for empty); the agent answers left, right, up
// or down. A move that changes nothing is illegal and wastes the turn; an
// unreadable answer ends the game with reward −1. Otherwise the reward is
// log2(max tile)/log2(target), 1 once the target tile appears; with
// Reward "art" it is ART's 2048 shape instead (ARTReward). Metrics:
// max_tile, board_value (the sum of the tiles), moves, illegal, won,
// invalid.
package game2048

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// Env is the 2048 environment.
type Env struct {
	Target   int // tile that wins (default 64)
	MaxMoves int // moves before the game is cut (default 100)
	// Reward is the reward shape: "" or RewardHone (log2 of the max tile
	// over log2 of the target), or RewardART (ARTReward).
	Reward string
}

// The reward shapes Env.Reward names.
const (
	RewardHone = "hone"
	RewardART  = "art"
)

// ARTReward is the reward OpenPipe ART's 2048 example gives a finished
// game (examples/2048/rollout.py, the branch after check_game_finished;
// its WINNING_VALUE, 128 in examples/2048/utils.py, is target here): with
// m the largest tile and s the sum of all tiles,
//
//	m ≥ target: 2
//	otherwise:  (log2 m − 1)/(log2 target − 1) + 0.2·(log2 s − 1)/(log2(16·target) − 1)
//
// The first term is 0 for a largest tile of 2 and 1 at the target; the
// second is 0 for a board summing to 2 and 1 for sixteen target tiles.
// An unreadable move is −1 in ART as here (the caller's case).
func ARTReward(board [16]int, target int) float64 {
	g := grid(board)
	m, s := g.max(), g.sum()
	if m >= target {
		return 2
	}
	t := math.Log2(float64(target))
	return (math.Log2(float64(m))-1)/(t-1) + 0.2*(math.Log2(float64(s))-1)/(math.Log2(16*float64(target))-1)
}

// MaxTarget is the largest tile a 4×4 board can hold, 2^17: fifteen
// cells holding 4 to 65536 and a 4 spawned in the last one merge into it.
// A larger target could never be reached.
const MaxTarget = 1 << 17

// New returns the environment with defaults for zero values.
func New(target, maxMoves int) *Env {
	if target <= 0 {
		target = 64
	}
	if maxMoves <= 0 {
		maxMoves = 100
	}
	return &Env{Target: target, MaxMoves: maxMoves}
}

// Payload is a scenario's payload: the seed of the tile spawns, so all
// attempts in a group face the same random stream.
type Payload struct {
	Seed     int64 `json:"seed"`
	Target   int   `json:"target"`
	MaxMoves int   `json:"max_moves"`
}

type grid [16]int

var dirs = []string{"left", "right", "up", "down"}

// slide moves every row towards index 0 of the line given by idx,
// merging equal neighbours once; it reports whether anything moved and
// the merged value.
func (g *grid) slide(dir string) (moved bool, score int) {
	for k := range 4 {
		var idx [4]int
		for j := range 4 {
			switch dir {
			case "left":
				idx[j] = 4*k + j
			case "right":
				idx[j] = 4*k + 3 - j
			case "up":
				idx[j] = 4*j + k
			case "down":
				idx[j] = 4*(3-j) + k
			}
		}
		var vals []int
		for _, i := range idx {
			if g[i] != 0 {
				vals = append(vals, g[i])
			}
		}
		var out []int
		for i := 0; i < len(vals); i++ {
			if i+1 < len(vals) && vals[i] == vals[i+1] {
				out = append(out, 2*vals[i])
				score += 2 * vals[i]
				i++
			} else {
				out = append(out, vals[i])
			}
		}
		for j, i := range idx {
			v := 0
			if j < len(out) {
				v = out[j]
			}
			if g[i] != v {
				moved = true
			}
			g[i] = v
		}
	}
	return moved, score
}

func (g *grid) spawn(rng *rand.Rand) {
	var free []int
	for i, v := range g {
		if v == 0 {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return
	}
	v := 2
	if rng.IntN(10) == 0 {
		v = 4
	}
	g[free[rng.IntN(len(free))]] = v
}

func (g *grid) max() int {
	m := 0
	for _, v := range g {
		m = max(m, v)
	}
	return m
}

func (g *grid) sum() int {
	s := 0
	for _, v := range g {
		s += v
	}
	return s
}

func (g *grid) canMove() bool {
	for _, d := range dirs {
		c := *g
		if moved, _ := c.slide(d); moved {
			return true
		}
	}
	return false
}

func (g *grid) String() string {
	var s strings.Builder
	for i, v := range g {
		if v == 0 {
			s.WriteString(".")
		} else {
			s.WriteString(strconv.Itoa(v))
		}
		if i%4 == 3 {
			s.WriteByte('\n')
		} else {
			s.WriteByte(' ')
		}
	}
	return s.String()
}

func parseGrid(s string) (grid, error) {
	var g grid
	rows := strings.Split(s, "\n")
	if len(rows) < 4 {
		return g, fmt.Errorf("2048: no board in %q", s)
	}
	for r := range 4 {
		f := strings.Fields(rows[r])
		if len(f) != 4 {
			return g, fmt.Errorf("2048: no board in %q", s)
		}
		for c, x := range f {
			if x != "." {
				v, err := strconv.Atoi(x)
				if err != nil {
					return g, fmt.Errorf("2048: bad cell %q", x)
				}
				g[4*r+c] = v
			}
		}
	}
	return g, nil
}

// Name implements env.Env.
func (e *Env) Name() string { return "2048" }

// RewardRange implements env.Env.
func (e *Env) RewardRange() (float64, float64) {
	if e.Reward == RewardART {
		return -1, 2
	}
	return -1, 1
}

// Scenarios implements env.Env.
func (e *Env) Scenarios(_ context.Context, seed int64, n int) ([]env.Scenario, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x32303438))
	out := make([]env.Scenario, n)
	for i := range out {
		p, _ := json.Marshal(Payload{Seed: rng.Int64N(1 << 40), Target: e.Target, MaxMoves: e.MaxMoves})
		out[i] = env.Scenario{ID: fmt.Sprintf("2048-%d-%d", seed, i), Env: "2048", Payload: p, Split: trajectory.SplitTrain}
	}
	return out, nil
}

// Overrides implements env.StoredSettings: the payload's target and
// max_moves are played over e's, read as NewEpisode reads them (a missing
// or non-positive max_moves is e's).
func (e *Env) Overrides(sc env.Scenario) []env.Override {
	p := Payload{Target: e.Target, MaxMoves: e.MaxMoves}
	if len(sc.Payload) == 0 || json.Unmarshal(sc.Payload, &p) != nil {
		return nil
	}
	var out []env.Override
	if p.Target != e.Target {
		out = append(out, env.Override{Key: "target", Env: strconv.Itoa(e.Target), Stored: strconv.Itoa(p.Target)})
	}
	if p.MaxMoves > 0 && p.MaxMoves != e.MaxMoves {
		out = append(out, env.Override{Key: "max-moves", Env: strconv.Itoa(e.MaxMoves), Stored: strconv.Itoa(p.MaxMoves)})
	}
	return out
}

// NewEpisode implements env.Env.
func (e *Env) NewEpisode(_ context.Context, sc env.Scenario, _ int64) (env.Episode, error) {
	p := Payload{Target: e.Target, MaxMoves: e.MaxMoves}
	if len(sc.Payload) > 0 {
		if err := json.Unmarshal(sc.Payload, &p); err != nil {
			return nil, fmt.Errorf("2048: scenario %s: payload: %w", sc.ID, err)
		}
	}
	if p.Target < 4 || p.Target > MaxTarget || p.Target&(p.Target-1) != 0 {
		return nil, fmt.Errorf("2048: scenario %s: target %d is not a power of two from 4 to %d", sc.ID, p.Target, MaxTarget)
	}
	if p.MaxMoves <= 0 {
		p.MaxMoves = e.MaxMoves
	}
	if e.Reward != "" && e.Reward != RewardHone && e.Reward != RewardART {
		return nil, fmt.Errorf("2048: reward %q: want %s or %s", e.Reward, RewardHone, RewardART)
	}
	ep := &episode{p: p, art: e.Reward == RewardART, rng: rand.New(rand.NewPCG(uint64(p.Seed), 0x7469))}
	ep.g.spawn(ep.rng)
	ep.g.spawn(ep.rng)
	return ep, nil
}

type episode struct {
	p                     Payload
	rng                   *rand.Rand
	g                     grid
	moves, illegal, turns int
	invalid               bool
	art                   bool // ARTReward's shape
}

func (ep *episode) prompt(prefix string) trajectory.Message {
	return env.User(prefix + ep.g.String() + "move: left, right, up or down")
}

func (ep *episode) Reset(context.Context) (env.Observation, error) {
	return env.Observation{Messages: []trajectory.Message{ep.prompt("")}}, nil
}

func (ep *episode) Step(_ context.Context, t env.Turn) (env.Feedback, error) {
	ep.turns++
	d := strings.ToLower(strings.TrimSpace(t.Message.Content))
	known := false
	for _, x := range dirs {
		known = known || d == x
	}
	if !known || len(t.Message.ToolCalls) > 0 {
		ep.invalid = true
		return env.Feedback{Done: true}, nil
	}
	prefix := ""
	if moved, _ := ep.g.slide(d); moved {
		ep.moves++
		ep.g.spawn(ep.rng)
	} else {
		ep.illegal++
		prefix = "illegal move\n"
	}
	if ep.g.max() >= ep.p.Target || !ep.g.canMove() || ep.turns >= ep.p.MaxMoves {
		return env.Feedback{Done: true}, nil
	}
	return env.Feedback{Messages: []trajectory.Message{ep.prompt(prefix)}}, nil
}

func (ep *episode) Outcome() env.Outcome {
	mt := ep.g.max()
	won := mt >= ep.p.Target
	r := math.Min(1, math.Log2(float64(mt))/math.Log2(float64(ep.p.Target)))
	if ep.art {
		r = ARTReward(ep.g, ep.p.Target)
	}
	if ep.invalid {
		r = -1
	}
	w := 0.0
	if won {
		w = 1
	}
	inv := 0.0
	if ep.invalid {
		inv = 1
	}
	return env.Outcome{Reward: r, Metrics: map[string]float64{
		"max_tile": float64(mt), "board_value": float64(ep.g.sum()), "moves": float64(ep.moves), "illegal": float64(ep.illegal), "won": w, "invalid": inv,
	}}
}

func (ep *episode) Close() error { return nil }

// Policies implements env.Scripted: "greedy" takes the move that merges
// most (ties: fewest tiles left), "random" a random legal move.
func (e *Env) Policies() []string { return []string{"greedy", "random"} }

// Policy implements env.Scripted; it reads the board from the last user
// message.
func (e *Env) Policy(name string, seed int64) (env.Policy, error) {
	if name != "greedy" && name != "random" {
		return nil, fmt.Errorf("2048: %w %q (have %v)", env.ErrUnknownPolicy, name, e.Policies())
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x706f6c))
	return env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
		text := strings.TrimPrefix(env.LastUser(msgs), "illegal move\n")
		g, err := parseGrid(text)
		if err != nil {
			return trajectory.Message{}, err
		}
		var legal []string
		best, bestScore := "", -1
		for _, d := range dirs {
			c := g
			moved, score := c.slide(d)
			if !moved {
				continue
			}
			legal = append(legal, d)
			empty := 0
			for _, v := range c {
				if v == 0 {
					empty++
				}
			}
			if s := score*16 + empty; s > bestScore {
				best, bestScore = d, s
			}
		}
		if len(legal) == 0 {
			return env.Assistant("left"), nil
		}
		if name == "random" {
			best = legal[rng.IntN(len(legal))]
		}
		return env.Assistant(best), nil
	}), nil
}
