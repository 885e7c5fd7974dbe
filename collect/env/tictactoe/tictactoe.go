// Package tictactoe is tic-tac-toe against a scripted opponent: "random"
// (any free cell), "greedy" (completes a line of its own when it can,
// otherwise random: it punishes every missed block) or "minimax"
// (perfect). The agent plays x and answers with a cell number 1-9 (row by
// row); the user message shows the board after the opponent's reply, a
// free cell as its number:
//
//	x2o
//	4x6
//	78o
//
// Reward: 1 win, 0.5 draw, 0 loss, −1 for an illegal or unreadable move,
// which ends the game; with Reward "art", ART's shape (ARTReward). Metrics: win, draw, loss, illegal, win_or_draw,
// moves, and two that show the blocking skill: threats (agent turns where
// the opponent could complete a line next move and the agent cannot win at
// once) and blocks (those turns where the agent took the threatened cell;
// with two threats no move saves the game, taking either counts).
//
// With ThreatStart > 0 that share of the generated scenarios starts from a
// mid-game board where o threatens one line and x, to move, cannot win at
// once (Payload.Start), so that the block decision comes up in every such
// game: a training option; held-out games start from the empty board.
package tictactoe

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
)

// Env is the tic-tac-toe environment.
type Env struct {
	Opponent string // default opponent for generated scenarios
	// Reward is the reward shape: "" or RewardHone (an illegal move −1),
	// or RewardART (ARTReward).
	Reward string
	// ThreatStart is the share of generated scenarios, in [0, 1], that
	// start from a threat board (see the package comment); 0 draws none
	// and leaves the scenarios as they were.
	ThreatStart float64

	mu   sync.Mutex
	memo map[board]int // minimax values, shared by all episodes
}

// opponents are the scripted opponents an episode can face.
var opponents = []string{"random", "greedy", "minimax"}

func knownOpponent(name string) bool {
	for _, o := range opponents {
		if o == name {
			return true
		}
	}
	return false
}

// New returns the environment; opponent "" means "random".
func New(opponent string) (*Env, error) {
	if opponent == "" {
		opponent = "random"
	}
	if !knownOpponent(opponent) {
		return nil, fmt.Errorf("tictactoe: opponent %q: want one of %v", opponent, opponents)
	}
	return &Env{Opponent: opponent, memo: map[board]int{}}, nil
}

// The reward shapes Env.Reward names.
const (
	RewardHone = "hone"
	RewardART  = "art"
)

// ARTReward is the reward OpenPipe ART's tic-tac-toe example gives
// (examples/tic_tac_toe/rollout.py) for a game's result, one of the
// metric names "win" 1, "draw" 0.5, "loss" 0 and "illegal" (an illegal
// or unreadable move, which ends the game):
//
//	−100 + ln(moves + 1)/ln(100)
//
// where moves counts the agent's legal moves before it: a game spoiled
// later costs a little less. Hone's default shape gives −1 there. A game
// cut before its end (any other result) keeps ART's initial reward, 0.
func ARTReward(result string, moves int) float64 {
	switch result {
	case "illegal":
		return -100 + math.Log(float64(moves)+1)/math.Log(100)
	case "win":
		return 1
	case "draw":
		return 0.5
	}
	return 0
}

// Payload is a scenario's payload.
type Payload struct {
	Opponent   string `json:"opponent"`
	AgentFirst bool   `json:"agent_first"`
	// Start, when set, is the board the game starts from, x to move:
	// nine cells row by row, each "x", "o" or "." (free). AgentFirst
	// then says who moved first, so x has as many marks as o, or one less.
	Start string `json:"start,omitempty"`
}

// board holds 9 cells: 0 empty, 1 x (agent), 2 o (opponent).
type board [9]uint8

var lines = [8][3]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6}, {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}}

func (b *board) winner() uint8 {
	for _, l := range lines {
		if b[l[0]] != 0 && b[l[0]] == b[l[1]] && b[l[1]] == b[l[2]] {
			return b[l[0]]
		}
	}
	return 0
}

func (b *board) full() bool {
	for _, c := range b {
		if c == 0 {
			return false
		}
	}
	return true
}

func (b *board) free() []int {
	var out []int
	for i, c := range b {
		if c == 0 {
			out = append(out, i)
		}
	}
	return out
}

// wins lists the free cells where p would complete a line.
func (b *board) wins(p uint8) []int {
	var out []int
	for _, i := range b.free() {
		b[i] = p
		if b.winner() == p {
			out = append(out, i)
		}
		b[i] = 0
	}
	return out
}

// String shows x, o, and a free cell as its number 1-9.
func (b *board) String() string {
	var s strings.Builder
	for i, c := range b {
		if c == 0 {
			s.WriteByte(byte('1' + i))
		} else {
			s.WriteByte(".xo"[c])
		}
		if i%3 == 2 {
			s.WriteByte('\n')
		}
	}
	return s.String()
}

// value is the minimax value of b with p to move, from x's side: +1 x wins,
// 0 draw, −1 o wins.
func (e *Env) value(b board, p uint8) int {
	if w := b.winner(); w != 0 {
		if w == 1 {
			return 1
		}
		return -1
	}
	if b.full() {
		return 0
	}
	key := b
	key[0] |= p << 4 // the side to move is part of the key
	e.mu.Lock()
	v, ok := e.memo[key]
	e.mu.Unlock()
	if ok {
		return v
	}
	best := -2
	if p == 2 {
		best = 2
	}
	for _, i := range b.free() {
		b[i] = p
		v := e.value(b, 3-p)
		b[i] = 0
		if p == 1 && v > best || p == 2 && v < best {
			best = v
		}
	}
	e.mu.Lock()
	e.memo[key] = best
	e.mu.Unlock()
	return best
}

// bestMoves lists the optimal moves for p.
func (e *Env) bestMoves(b board, p uint8) []int {
	var out []int
	best := 0
	for k, i := range b.free() {
		b[i] = p
		v := e.value(b, 3-p)
		b[i] = 0
		if p == 2 {
			v = -v
		}
		if k == 0 || v > best {
			best, out = v, out[:0]
		}
		if v == best {
			out = append(out, i)
		}
	}
	return out
}

// Name implements env.Env.
func (e *Env) Name() string { return "tictactoe" }

// RewardRange implements env.Env.
func (e *Env) RewardRange() (float64, float64) {
	if e.Reward == RewardART {
		return -100, 1
	}
	return -1, 1
}

// Scenarios implements env.Env: the agent moves first in about half; with
// ThreatStart, that share starts from a threat board.
func (e *Env) Scenarios(_ context.Context, seed int64, n int) ([]env.Scenario, error) {
	if e.ThreatStart < 0 || e.ThreatStart > 1 || math.IsNaN(e.ThreatStart) {
		return nil, fmt.Errorf("tictactoe: threat start share %v: want a number in [0, 1]", e.ThreatStart)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x747474))
	out := make([]env.Scenario, n)
	for i := range out {
		pl := Payload{Opponent: e.Opponent, AgentFirst: rng.IntN(2) == 0}
		// No draw at all without ThreatStart: the scenarios of a seed stay
		// those of earlier versions.
		if e.ThreatStart > 0 && rng.Float64() < e.ThreatStart {
			pl.Start = threatBoard(rng, pl.AgentFirst).cells()
		}
		p, _ := json.Marshal(pl)
		out[i] = env.Scenario{ID: fmt.Sprintf("tictactoe-%d-%d", seed, i), Env: "tictactoe", Payload: p, Split: trajectory.SplitTrain}
	}
	return out, nil
}

// NewEpisode implements env.Env.
func (e *Env) NewEpisode(_ context.Context, sc env.Scenario, seed int64) (env.Episode, error) {
	p := Payload{Opponent: e.Opponent, AgentFirst: true}
	if len(sc.Payload) > 0 {
		if err := json.Unmarshal(sc.Payload, &p); err != nil {
			return nil, fmt.Errorf("tictactoe: scenario %s: payload: %w", sc.ID, err)
		}
	}
	if p.Opponent == "" {
		p.Opponent = e.Opponent
	}
	if !knownOpponent(p.Opponent) {
		return nil, fmt.Errorf("tictactoe: scenario %s: opponent %q: want one of %v", sc.ID, p.Opponent, opponents)
	}
	if e.Reward != "" && e.Reward != RewardHone && e.Reward != RewardART {
		return nil, fmt.Errorf("tictactoe: reward %q: want %s or %s", e.Reward, RewardHone, RewardART)
	}
	ep := &episode{e: e, p: p, rng: rand.New(rand.NewPCG(uint64(seed), 0x6f7070))}
	if p.Start != "" {
		b, err := startBoard(p)
		if err != nil {
			return nil, fmt.Errorf("tictactoe: scenario %s: %w", sc.ID, err)
		}
		ep.b = b
	}
	return ep, nil
}

// Overrides implements env.StoredSettings: the payload's opponent is
// played over e.Opponent (NewEpisode).
func (e *Env) Overrides(sc env.Scenario) []env.Override {
	var p Payload
	if len(sc.Payload) == 0 || json.Unmarshal(sc.Payload, &p) != nil || p.Opponent == "" || p.Opponent == e.Opponent {
		return nil
	}
	return []env.Override{{Key: "opponent", Env: e.Opponent, Stored: p.Opponent}}
}

// threatBoard plays random moves from the empty board (x first when
// agentFirst) until x is to move, o threatens exactly one line and x
// cannot win at once; a game that ends first is replayed.
func threatBoard(rng *rand.Rand, agentFirst bool) board {
	for {
		var b board
		p := uint8(2)
		if agentFirst {
			p = 1
		}
		for b.winner() == 0 && !b.full() {
			if p == 1 && len(b.wins(2)) == 1 && len(b.wins(1)) == 0 {
				return b
			}
			free := b.free()
			b[free[rng.IntN(len(free))]] = p
			p = 3 - p
		}
	}
}

// cells is the board as Payload.Start writes it.
func (b board) cells() string {
	var s [9]byte
	for i, c := range b {
		s[i] = ".xo"[c]
	}
	return string(s[:])
}

// startBoard reads Payload.Start and checks that it is a game in progress
// with x to move.
func startBoard(p Payload) (board, error) {
	var b board
	if len(p.Start) != 9 {
		return b, fmt.Errorf("start %q: want 9 cells of x, o or .", p.Start)
	}
	var nx, no int
	for i := range 9 {
		switch p.Start[i] {
		case 'x':
			b[i], nx = 1, nx+1
		case 'o':
			b[i], no = 2, no+1
		case '.':
		default:
			return b, fmt.Errorf("start %q: cell %d is %q, want x, o or .", p.Start, i+1, p.Start[i])
		}
	}
	if want := nx + 1; p.AgentFirst && no != nx || !p.AgentFirst && no != want {
		return b, fmt.Errorf("start %q: %d x and %d o is not x to move with agent_first %v", p.Start, nx, no, p.AgentFirst)
	}
	if b.winner() != 0 || b.full() {
		return b, fmt.Errorf("start %q: the game is over", p.Start)
	}
	return b, nil
}

type episode struct {
	e       *Env
	p       Payload
	rng     *rand.Rand
	b       board
	moves   int
	illegal bool
	result  uint8 // 0 playing or draw, 1 agent won, 2 opponent won
	over    bool
	threats int // agent turns facing a threat it could not answer with a win
	blocks  int // those where it took a threatened cell
}

func (ep *episode) opponent() {
	moves := ep.b.free()
	switch ep.p.Opponent {
	case "minimax":
		moves = ep.e.bestMoves(ep.b, 2)
	case "greedy":
		if w := ep.b.wins(2); len(w) > 0 {
			moves = w
		}
	}
	ep.b[moves[ep.rng.IntN(len(moves))]] = 2
}

func (ep *episode) prompt() trajectory.Message {
	return env.User(ep.b.String() + "your move (x, 1-9)")
}

func (ep *episode) Reset(context.Context) (env.Observation, error) {
	if !ep.p.AgentFirst && ep.p.Start == "" {
		ep.opponent()
	}
	return env.Observation{Messages: []trajectory.Message{ep.prompt()}}, nil
}

func (ep *episode) Step(_ context.Context, t env.Turn) (env.Feedback, error) {
	n := parseMove(t.Message.Content)
	if n == 0 || ep.b[n-1] != 0 || len(t.Message.ToolCalls) > 0 {
		ep.illegal, ep.over = true, true
		return env.Feedback{Done: true}, nil
	}
	ep.moves++
	if threat := ep.b.wins(2); len(threat) > 0 && len(ep.b.wins(1)) == 0 {
		ep.threats++
		for _, c := range threat {
			if c == n-1 {
				ep.blocks++
			}
		}
	}
	ep.b[n-1] = 1
	if ep.end() {
		return env.Feedback{Done: true}, nil
	}
	ep.opponent()
	if ep.end() {
		return env.Feedback{Done: true}, nil
	}
	return env.Feedback{Messages: []trajectory.Message{ep.prompt()}}, nil
}

// parseMove reads an answer as docs/games.md defines a move, one digit
// 1-9 with any white space around it, and returns 0 for anything else:
// strconv.Atoi also took "+5" and "05", answers the docs call illegal.
func parseMove(answer string) int {
	a := strings.TrimSpace(answer)
	if len(a) != 1 || a[0] < '1' || a[0] > '9' {
		return 0
	}
	return int(a[0] - '0')
}

func (ep *episode) end() bool {
	if w := ep.b.winner(); w != 0 {
		ep.result, ep.over = w, true
	} else if ep.b.full() {
		ep.over = true
	}
	return ep.over
}

func (ep *episode) Outcome() env.Outcome {
	m := map[string]float64{"win": 0, "draw": 0, "loss": 0, "illegal": 0, "win_or_draw": 0,
		"moves": float64(ep.moves), "threats": float64(ep.threats), "blocks": float64(ep.blocks)}
	r := 0.0
	switch {
	case ep.illegal:
		m["illegal"], r = 1, -1
	case ep.result == 1:
		m["win"], m["win_or_draw"], r = 1, 1, 1
	case ep.result == 2:
		m["loss"] = 1
	case ep.over:
		m["draw"], m["win_or_draw"], r = 1, 1, 0.5
	}
	if ep.e.Reward == RewardART {
		result := ""
		for _, k := range []string{"win", "draw", "loss", "illegal"} {
			if m[k] == 1 {
				result = k
			}
		}
		r = ARTReward(result, ep.moves)
	}
	return env.Outcome{Reward: r, Metrics: m}
}

func (ep *episode) Close() error { return nil }

// Policies implements env.Scripted: "minimax" plays perfectly, "random"
// picks a random free cell, "teacher" completes a line when it can and
// otherwise plays at random (it never blocks), "blocker" is the teacher
// that also blocks the opponent's line when it cannot win.
func (e *Env) Policies() []string { return []string{"minimax", "random", "teacher", "blocker"} }

// Policy implements env.Scripted. It reads the board from the last user
// message, as a model would.
func (e *Env) Policy(name string, seed int64) (env.Policy, error) {
	switch name {
	case "minimax", "random", "teacher", "blocker":
	default:
		return nil, fmt.Errorf("tictactoe: %w %q (have %v)", env.ErrUnknownPolicy, name, e.Policies())
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x706f6c))
	return env.PolicyFunc(func(_ context.Context, msgs []trajectory.Message, _ []trajectory.Tool) (trajectory.Message, error) {
		b, err := parseBoard(env.LastUser(msgs))
		if err != nil {
			return trajectory.Message{}, err
		}
		moves := b.free()
		switch {
		case name == "minimax":
			moves = e.bestMoves(b, 1)
		case name == "random":
		case len(b.wins(1)) > 0:
			moves = b.wins(1)
		case name == "blocker" && len(b.wins(2)) > 0:
			moves = b.wins(2)
		}
		if len(moves) == 0 {
			return trajectory.Message{}, fmt.Errorf("tictactoe: no free cell")
		}
		return env.Assistant(strconv.Itoa(moves[rng.IntN(len(moves))] + 1)), nil
	}), nil
}

func parseBoard(s string) (board, error) {
	var b board
	rows := strings.Split(s, "\n")
	if len(rows) < 3 {
		return b, fmt.Errorf("tictactoe: no board in %q", s)
	}
	for r := range 3 {
		if len(rows[r]) != 3 {
			return b, fmt.Errorf("tictactoe: no board in %q", s)
		}
		for c := range 3 {
			switch ch := rows[r][c]; {
			case ch == 'x':
				b[3*r+c] = 1
			case ch == 'o':
				b[3*r+c] = 2
			case ch == byte('1'+3*r+c) || ch == '.':
			default:
				return b, fmt.Errorf("tictactoe: cell %d of the board is %q, want x, o or %c", 3*r+c+1, ch, '1'+3*r+c)
			}
		}
	}
	return b, nil
}
