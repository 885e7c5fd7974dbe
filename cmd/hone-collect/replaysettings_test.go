package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayStoredSettingsWinWithWarning: a scenario's payload keeps the
// settings it was made with (2048's max-moves, tictactoe's opponent), and a
// replay with --scenarios plays them, so that it is the same episode. An
// --env-opt given for the replay that differs was dropped without a word:
// a user asking for opponent=minimax played the stored opponent. Now the
// stored value still wins and the run warns once per setting, naming it,
// both values and how many scenarios differ; a setting that agrees, or one
// not given, is not warned of.
func TestReplayStoredSettingsWinWithWarning(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "made.parquet")
	if r := collectBin(t, "--env", "2048", "--env-opt", "max-moves=3", "--groups", "2", "-G", "1", "--max-turns", "100",
		"--policy", "scripted:greedy", "-o", made); r.code != 0 {
		t.Fatalf("collect: exit %d, stderr %s", r.code, r.stderr)
	}
	replay := filepath.Join(dir, "replay.parquet")
	r := collectBin(t, "--scenarios", made, "--env-opt", "max-moves=50", "--env-opt", "target=64", "-G", "1", "--max-turns", "100",
		"--policy", "scripted:greedy", "-o", replay)
	if r.code != 0 {
		t.Fatalf("replay: exit %d, stderr %s", r.code, r.stderr)
	}
	var warned []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "stored") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 {
		t.Fatalf("want one warning about stored settings, got %q (stderr %s)", warned, r.stderr)
	}
	for _, want := range []string{"max-moves", "given=50", "stored=3", "scenarios=2"} {
		if !strings.Contains(warned[0], want) {
			t.Errorf("warning %q lacks %q", warned[0], want)
		}
	}
	for _, g := range read(t, replay) {
		tr := g.Trajectories[0]
		var p struct {
			MaxMoves int `json:"max_moves"`
		}
		if err := json.Unmarshal([]byte(tr.Payload), &p); err != nil || p.MaxMoves != 3 {
			t.Errorf("%s: payload %s: want the stored max_moves 3 (err %v)", tr.ScenarioID, tr.Payload, err)
		}
		if tr.Metrics["moves"] > 3 {
			t.Errorf("%s: %v moves: want at most the stored 3", tr.ScenarioID, tr.Metrics["moves"])
		}
	}

	// tictactoe: the stored opponent is played and the given one warned of.
	ttt := filepath.Join(dir, "ttt.parquet")
	if r := collectBin(t, "--env", "tictactoe", "--groups", "3", "-G", "1", "--policy", "scripted:random", "-o", ttt); r.code != 0 {
		t.Fatalf("collect tictactoe: exit %d, stderr %s", r.code, r.stderr)
	}
	out := filepath.Join(dir, "ttt2.parquet")
	r = collectBin(t, "--scenarios", ttt, "--env-opt", "opponent=minimax", "-G", "1", "--policy", "scripted:random", "-o", out)
	if r.code != 0 || !strings.Contains(r.stderr, "opponent") || !strings.Contains(r.stderr, "given=minimax") ||
		!strings.Contains(r.stderr, "stored=random") || !strings.Contains(r.stderr, "scenarios=3") {
		t.Fatalf("exit %d, stderr %s; want a warning naming opponent, minimax, random and 3 scenarios", r.code, r.stderr)
	}
	for _, g := range read(t, out) {
		if tr := g.Trajectories[0]; !strings.Contains(tr.Payload, `"opponent":"random"`) {
			t.Errorf("%s: payload %s: want the stored opponent random", tr.ScenarioID, tr.Payload)
		}
	}
	// No --env-opt, or one equal to the stored value: no warning.
	for _, extra := range [][]string{nil, {"--env-opt", "opponent=random"}} {
		args := append([]string{"--scenarios", ttt, "-G", "1", "--policy", "scripted:random", "-o", filepath.Join(dir, "ttt3.parquet")}, extra...)
		if r := collectBin(t, args...); r.code != 0 || strings.Contains(r.stderr, "stored") {
			t.Errorf("%q: exit %d, stderr %s; want no warning", extra, r.code, r.stderr)
		}
	}
}
