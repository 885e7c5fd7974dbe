package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/testbin"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

var binary, collectBinary string

// TestMain builds hone-score, and hone-collect to make real trajectory
// files with.
func TestMain(m *testing.M) {
	testbin.Main(m, func(dir string) {
		binary, collectBinary = filepath.Join(dir, "hone-score"), filepath.Join(dir, "hone-collect")
	}, ".", "../hone-collect")
}

type result struct {
	code           int
	stdout, stderr string
}

func runBin(t *testing.T, env []string, stdin []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// scenario writes n groups of k tries; try 0 of each group wins.
func scenario(t *testing.T, dir, name string, first, n, k int) string {
	t.Helper()
	var gs []trajectory.Group
	for g := first; g < first+n; g++ {
		id := fmt.Sprintf("g%d", g)
		grp := trajectory.Group{ID: id}
		for i := 0; i < k; i++ {
			ans, win := fmt.Sprintf("I guess %d", 20+i), 0.0
			if i == 0 {
				ans, win = "I guess 42. WIN", 1
			}
			grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{
				ID: fmt.Sprintf("%s-%d", id, i), GroupID: id, ScenarioID: id, Env: "guess",
				Messages: []trajectory.Message{
					{Role: "system", Content: "Find the secret number."},
					{Role: "user", Content: "Scenario " + id},
					{Role: "assistant", Content: ans, Trainable: true, TokenIDs: []int32{5, 6}, Logprobs: []float32{-1, -2}},
				},
				Reward:  trajectory.Float64(win),
				Metrics: map[string]float64{"win": win, "illegal": float64(i)},
			})
		}
		gs = append(gs, grp)
	}
	p := filepath.Join(dir, name)
	if err := trajectory.WriteFile(context.Background(), p, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// oneGroupEdited writes dir/name: scenario's one group of two rows
// (dir/in.parquet), as edit leaves it.
func oneGroupEdited(t *testing.T, dir, name string, edit func(gs []trajectory.Group)) string {
	t.Helper()
	gs := readBack(t, scenario(t, dir, "in.parquet", 0, 1, 2))
	edit(gs)
	p := filepath.Join(dir, name)
	if err := trajectory.WriteFile(context.Background(), p, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return p
}

func readBack(t *testing.T, path string) []trajectory.Group {
	t.Helper()
	gs, err := trajectory.ReadFile(context.Background(), path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return gs
}

func component(tr trajectory.Trajectory, name string) (float64, bool) {
	for _, c := range tr.RewardComponents {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}

func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 3, 4)
	b := scenario(t, dir, "b.parquet", 3, 2, 3)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	env := []string{"OPENAI_API_KEY=sk-e2e-secret", "OPENAI_BASE_URL=" + srv.BaseURL()}
	out := filepath.Join(dir, "scored.parquet")
	args := []string{"-o", out, "--judge-model", "judge-m", "--judge-cache", filepath.Join(dir, "cache"),
		"--scorer", "env", "--scorer", "ruler", "--scorer", "final=formula:0.5*ruler + 0.5*env - 0.01*illegal",
		"--judge-price-prompt", "0.5", "--judge-price-completion", "1.5", "--log-level", "debug", a, b}
	r := runBin(t, env, nil, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if srv.Hits() != 5 {
		t.Fatalf("judge hits = %d, want one per group (5)", srv.Hits())
	}
	for _, req := range srv.Requests() {
		if req.Auth != "Bearer sk-e2e-secret" {
			t.Fatalf("auth header = %q", req.Auth)
		}
	}
	if strings.Contains(r.stderr, "sk-e2e-secret") {
		t.Fatalf("the API key was logged:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "5 groups (18 rows) read: 5 scored") || !strings.Contains(r.stderr, "judge judge-m: 5 calls, 0 cached") || !strings.Contains(r.stderr, "$") {
		t.Fatalf("summary missing:\n%s", r.stderr)
	}
	gs := readBack(t, out)
	var order []string
	for _, g := range gs {
		order = append(order, g.ID)
		for i, tr := range g.Trajectories {
			rul, _ := component(tr, "ruler")
			envR, _ := component(tr, "env")
			want := 0.5*rul + 0.5*envR - 0.01*float64(i)
			if (i == 0) != (rul == 1) || tr.Reward == nil || *tr.Reward != want {
				t.Fatalf("%s: components %+v reward %v, want %v", tr.ID, tr.RewardComponents, tr.Reward, want)
			}
		}
	}
	if strings.Join(order, ",") != "g0,g1,g2,g3,g4" {
		t.Fatalf("group order %v", order)
	}

	// Again: same bytes, answered from the cache.
	out2 := filepath.Join(dir, "scored2.parquet")
	args[1] = out2
	if r := runBin(t, env, nil, args...); r.code != 0 || !strings.Contains(r.stderr, "0 calls, 5 cached") {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	b1, _ := os.ReadFile(out)
	b2, _ := os.ReadFile(out2)
	if srv.Hits() != 5 || !bytes.Equal(b1, b2) {
		t.Fatalf("second run: hits %d, identical %v", srv.Hits(), bytes.Equal(b1, b2))
	}

	// stdin to stdout, and --only-missing over scored output: nothing to do.
	r = runBin(t, env, b1, "--judge-model", "judge-m", "--judge-cache", filepath.Join(dir, "cache"), "--only-missing",
		"--scorer", "env", "--scorer", "ruler", "--scorer", "final=formula:0.5*ruler + 0.5*env - 0.01*illegal", "-")
	if r.code != 0 || !strings.Contains(r.stderr, "5 passed through") || r.stdout != string(b1) {
		t.Fatalf("only-missing from stdin: exit %d, same %v\n%s", r.code, r.stdout == string(b1), r.stderr)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 2)
	solo := scenario(t, dir, "solo.parquet", 5, 1, 1)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	judgeArgs := []string{"--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache", "--scorer", "ruler"}
	out := filepath.Join(dir, "out.parquet")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad formula", []string{"-o", out, "--scorer", "formula:win +* 2", in}, 2, `formula "win +* 2"`},
		// Named with the file and rows of the group that fails. One group
		// at a time: at more, g1 may fail first in time and stop g0
		// before it is scored (TestBadInputNamesRowsWhenLaterGroupFailsFirst).
		{"unknown metric", []string{"-o", out, "--concurrency", "1", "--scorer", "formula:wins", in}, 2, `in.parquet: rows 0-1: scorer formula: group "g0", trajectory "g0-0": formula "wins": no metric or component named "wins"`},
		{"unknown metric looked up", []string{"-o", out, "--scorer", `formula:metrics["wins"] == 1 ? 1 : 0`, in}, 2, `no metric named "wins"`},
		{"no input", []string{"-o", out}, 2, "no input"},
		{"missing input", []string{"-o", out, filepath.Join(dir, "nope.parquet")}, 2, "nope.parquet"},
		{"bad policy", []string{"-o", out, "--on-judge-error", "retry", in}, 2, "want fail, skip or mark"},
		{"group of one", append([]string{"-o", out, in, solo}, judgeArgs...), 0, "3 scored, 0 passed through, 0 skipped"},
		{"context too small", append([]string{"-o", out, "--judge-context-tokens", "100", in}, judgeArgs...), 2, "leaves no room for the prompt"},
		// Refused, not taken for "the server's default" as they were.
		{"negative temperature", append([]string{"-o", out, "--judge-temperature", "-0.5", in}, judgeArgs...), 2, "--judge-temperature -0.5: want 0 or more"},
		// Refused before any judge call: on a file scored before, the
		// formula read the earlier run's ruler score without a word.
		{"formula before what it reads", append([]string{"-o", out, "--scorer", "final=formula:0.5*ruler + 0.5*env", in}, judgeArgs...), 2,
			`--scorer "final=formula:0.5*ruler + 0.5*env" reads component "ruler", which --scorer "ruler" writes after it`},
		// A formula's bare reward is the reward so far in the chain, so a
		// component named reward was hidden from later formulas: one
		// reading it got the last scorer's value without a word.
		{"component named reward", []string{"-o", out, "--scorer", "reward=formula:win*2", "--scorer", "x=formula:win*5", "--scorer", "final=formula:reward", in}, 2,
			`--scorer "reward=formula:win*2": component name "reward" is taken by the reward so far in the chain`},
		{"negative max tokens", append([]string{"-o", out, "--judge-max-tokens", "-5", in}, judgeArgs...), 2, "--judge-max-tokens -5: want 0 (the server's default) or more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(out)
			r := runBin(t, nil, nil, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", r.code, c.code, r.stderr, c.want)
			}
			_, err := os.Stat(out)
			if (c.code == 0) != (err == nil) {
				t.Fatalf("output exists = %v after exit %d", err == nil, r.code)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
			if len(left) > 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
}

// SIGINT while a judge call hangs: exit 130, the groups finished before
// are written whole, nothing else.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 3, 2)
	out := filepath.Join(dir, "out.parquet")
	interruptAfterFirstGroup(t, out, in)
	gs := readBack(t, out)
	if len(gs) != 1 || gs[0].ID != "g0" || len(gs[0].Trajectories) != 2 || *gs[0].Trajectories[0].Reward != 1 {
		t.Fatalf("kept %d groups: %+v", len(gs), gs)
	}
}

// collected makes the files of a real run: 8 groups of 4 played by
// hone-collect's scripted policy (32 rows), and one group collected
// against an endpoint where nothing listens (1 errored row; --max-failures
// plays on where a dead server would otherwise stop the run unwritten).
func collected(t *testing.T, dir string) (good, dead string) {
	t.Helper()
	good, dead = filepath.Join(dir, "good.parquet"), filepath.Join(dir, "dead.parquet")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, collectBinary, "--env", "guess", "--groups", "8", "-G", "4", "--policy", "scripted", "-o", good).CombinedOutput(); err != nil {
		t.Fatalf("hone-collect: %v\n%s", err, b)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	b, err := exec.CommandContext(ctx, collectBinary, "--env", "guess", "--groups", "1", "-G", "1", "--run", "dead", "--model", "m",
		"--base-url", base, "--retries", "0", "--max-failures", "1", "-o", dead).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("hone-collect against nothing: %v, want exit 1\n%s", err, b)
	}
	return good, dead
}

// A collected file with an errored group scores under every scorer: the
// errored row passes through unscored and is counted; --on-judge-error
// does what its help says, and a judge that fails every group ends a skip
// or mark run with exit 1 after writing its output.
func TestErroredRows(t *testing.T) {
	dir := t.TempDir()
	good, dead := collected(t, dir)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("found"))
	judgeArgs := []string{"--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache"}
	const counted = "9 groups (33 rows) read: 8 scored, 0 passed through, 0 skipped, 0 marked, 1 with every row errored; 33 rows written, 1 of them errored in collection and passed through unscored"
	for _, scorers := range [][]string{{"env"}, {"formula:found - 0.1*invalid"}, {"ruler"}, {"env", "ruler", "final=formula:0.5*env + 0.5*ruler"}} {
		t.Run(strings.Join(scorers, " | "), func(t *testing.T) {
			out := filepath.Join(dir, "scored.parquet")
			args := append([]string{"-o", out, good, dead}, judgeArgs...)
			for _, s := range scorers {
				args = append(args, "--scorer", s)
			}
			r := runBin(t, nil, nil, args...)
			if r.code != 0 || !strings.Contains(r.stderr, counted) {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			gs := readBack(t, out)
			if len(gs) != 9 {
				t.Fatalf("%d groups", len(gs))
			}
			for _, g := range gs[:8] {
				for _, tr := range g.Trajectories {
					if tr.Reward == nil || tr.Error != "" {
						t.Fatalf("%s: reward %v, error %q", tr.ID, tr.Reward, tr.Error)
					}
				}
			}
			e := gs[8].Trajectories[0]
			if e.Reward != nil || !strings.Contains(e.Error, "connection refused") || len(e.RewardComponents) != 0 {
				t.Fatalf("errored row: reward %v, error %q, components %+v", e.Reward, e.Error, e.RewardComponents)
			}
		})
	}

	down := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 500} })
	judgeArgs = []string{"--judge-base-url", down.BaseURL(), "--judge-model", "m", "--no-judge-cache", "--judge-retries", "0", "--scorer", "ruler"}
	cases := []struct {
		policy string
		code   int
		want   string
		groups int
	}{
		{"fail", 1, "(--on-judge-error fail; use skip or mark", 0},
		{"skip", 1, "9 groups (33 rows) read: 0 scored, 0 passed through, 8 skipped, 0 marked, 1 with every row errored; 1 rows written, 1 of them errored", 1},
		{"mark", 1, "9 groups (33 rows) read: 0 scored, 0 passed through, 0 skipped, 8 marked, 1 with every row errored; 33 rows written, 1 of them errored", 9},
	}
	for _, c := range cases {
		t.Run("on-judge-error "+c.policy, func(t *testing.T) {
			out := filepath.Join(dir, c.policy+".parquet")
			r := runBin(t, nil, nil, append([]string{"-o", out, "--on-judge-error", c.policy, good, dead}, judgeArgs...)...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", r.code, c.code, r.stderr, c.want)
			}
			if c.groups == 0 {
				if _, err := os.Stat(out); err == nil {
					t.Fatal("output written after --on-judge-error fail")
				}
				return
			}
			// The judge failed every group: exit 1, saying so, with the
			// output written all the same.
			if !strings.Contains(r.stderr, "the judge failed every group it was given (") {
				t.Fatalf("stderr does not say the judge failed every group:\n%s", r.stderr)
			}
			gs := readBack(t, out)
			if len(gs) != c.groups || !strings.Contains(gs[len(gs)-1].Trajectories[0].Error, "connection refused") {
				t.Fatalf("%d groups: %+v", len(gs), gs)
			}
			if c.policy == "mark" {
				m := gs[0].Trajectories[0]
				if !strings.HasPrefix(m.Error, "hone-score: scorer ruler: ") || !strings.Contains(m.Error, "500") || m.Reward == nil {
					t.Fatalf("marked row: error %q, reward %v", m.Error, m.Reward)
				}
			}
		})
	}
}

// The judge cache answers only the question that was asked: a verdict
// sampled at one --judge-temperature is not served to a run that asks for
// another (a run at 0 for reproducible scores got the earlier run's
// verdicts at 1 from the cache, with no judge call), while a run at the
// same temperature is answered from the cache.
func TestJudgeCacheKeyedByTemperature(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 3)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	score := func(temp ...string) result {
		args := append([]string{"-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", srv.BaseURL(), "--judge-model", "m",
			"--judge-cache", filepath.Join(dir, "cache"), "--scorer", "ruler", in}, temp...)
		r := runBin(t, nil, nil, args...)
		if r.code != 0 {
			t.Fatalf("hone-score %v: exit %d\n%s", temp, r.code, r.stderr)
		}
		return r
	}
	steps := []struct {
		temp  []string
		hits  int // the judge server's hits after the run
		which string
	}{
		{[]string{"--judge-temperature", "1"}, 2, "first run at 1"},
		{[]string{"--judge-temperature", "0"}, 4, "at 0 after a run at 1"},
		{[]string{"--judge-temperature", "0"}, 4, "at 0 again"},
		{[]string{"--judge-temperature", "1"}, 4, "at 1 again"},
		{nil, 6, "at the server's default"},
		{nil, 6, "at the server's default again"},
	}
	for _, s := range steps {
		r := score(s.temp...)
		if srv.Hits() != s.hits {
			t.Fatalf("%s: the judge was called %d times in all, want %d\n%s", s.which, srv.Hits(), s.hits, r.stderr)
		}
	}
	reqs := srv.Requests()
	for i, want := range []string{"1", "1", "0", "0", "<nil>", "<nil>"} {
		got := "<nil>"
		if reqs[i].Temperature != nil {
			got = fmt.Sprint(*reqs[i].Temperature)
		}
		if got != want {
			t.Errorf("judge call %d: temperature %s, want %s", i, got, want)
		}
	}
}

// TestJudgeRefusesEveryGroup: an auth error or a model the server does
// not know (401, 403, 404) will be the answer for every group, so under
// every --on-judge-error policy the run stops after the first, exit 1,
// naming the status and the judge model, rather than calling the judge
// once per group (under skip and mark) to skip or mark them all.
func TestJudgeRefusesEveryGroup(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 6, 2)
	for _, status := range []int{401, 403, 404} {
		for _, policy := range []string{"fail", "skip", "mark"} {
			t.Run(fmt.Sprint(status, "/", policy), func(t *testing.T) {
				srv := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: status} })
				out := filepath.Join(t.TempDir(), "out.parquet")
				r := runBin(t, nil, nil, "-o", out, "--judge-base-url", srv.BaseURL(), "--judge-model", "judge-x", "--no-judge-cache",
					"--concurrency", "1", "--on-judge-error", policy, "--scorer", "ruler", in)
				want := fmt.Sprintf(`judge model "judge-x" answered HTTP %d`, status)
				if r.code != 1 || !strings.Contains(r.stderr, want) {
					t.Fatalf("exit %d (want 1), stderr:\n%s\nwant it to contain %q", r.code, r.stderr, want)
				}
				if srv.Hits() != 1 {
					t.Fatalf("the judge was called %d times, want once: the answer is the same for every group", srv.Hits())
				}
				if _, err := os.Stat(out); err == nil {
					t.Fatalf("output written after the run failed")
				}
			})
		}
	}
}

// TestJudgeGoneAfterAnswersFollowsPolicy: a judge that answered groups
// and then says 404 (a vLLM restarted behind hone-serve's front answers
// 404 until its adapter is loaded again) is a failed group under skip and
// mark, not a stopped run: the run stopped at the first 404 whatever came
// before, and wrote nothing of the groups already judged. Under fail it
// stops, as before.
func TestJudgeGoneAfterAnswersFollowsPolicy(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 6, 2)
	for _, c := range []struct {
		policy, summary string
		code            int
	}{
		{"skip", "1 scored, 0 passed through, 5 skipped, 0 marked", 0},
		{"mark", "1 scored, 0 passed through, 0 skipped, 5 marked", 0},
		{"fail", "", 1},
	} {
		t.Run(c.policy, func(t *testing.T) {
			good := judgetest.KeywordJudge("win")
			srv := judgetest.NewServer(t, func(n int, r judgetest.Request) judgetest.Reply {
				if n == 0 {
					return good(n, r)
				}
				return judgetest.Reply{Status: 404}
			})
			out := filepath.Join(t.TempDir(), "out.parquet")
			r := runBin(t, nil, nil, "-o", out, "--judge-base-url", srv.BaseURL(), "--judge-model", "judge-x", "--no-judge-cache",
				"--concurrency", "1", "--on-judge-error", c.policy, "--scorer", "ruler", in)
			if r.code != c.code || !strings.Contains(r.stderr, c.summary) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", r.code, c.code, r.stderr, c.summary)
			}
			if c.code == 0 && srv.Hits() != 6 {
				t.Errorf("the judge was called %d times, want 6 (one per group)", srv.Hits())
			}
		})
	}
}

// A group that --on-judge-error skip or mark passes over is named in the
// log with the judge's reason, as the run's last line says ("the log has
// each reason"): a run whose judge failed some groups exits 0 and counted
// them, and the log was the only place to learn which and why (the rows of
// a skipped group are not written at all).
func TestJudgeFailureLoggedPerGroup(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 3, 2)
	keyword := judgetest.KeywordJudge("WIN")
	srv := judgetest.NewServer(t, func(n int, req judgetest.Request) judgetest.Reply {
		if strings.Contains(req.User(), "Scenario g1") {
			return judgetest.Reply{Status: 500, Body: `{"error":{"message":"the judge fell over"}}`}
		}
		return keyword(n, req)
	})
	for _, policy := range []string{"skip", "mark"} {
		t.Run(policy, func(t *testing.T) {
			r := runBin(t, nil, nil, "-o", filepath.Join(dir, policy+".parquet"), "--scorer", "ruler", "--on-judge-error", policy,
				"--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache", "--judge-retries", "0", in)
			if r.code != 0 {
				t.Fatalf("exit %d (want 0: two of three groups scored):\n%s", r.code, r.stderr)
			}
			var named bool
			for line := range strings.Lines(r.stderr) {
				if strings.Contains(line, "g1") && strings.Contains(line, "500") && strings.Contains(line, policy) {
					named = true
				}
				if strings.Contains(line, "g0") || strings.Contains(line, "g2") {
					t.Errorf("a scored group is named in the log: %s", line)
				}
			}
			if !named {
				t.Fatalf("no log line names group g1, the judge's HTTP 500 and --on-judge-error %s:\n%s", policy, r.stderr)
			}
		})
	}
}

// interruptAfterFirstGroup runs a ruler scoring of in to out, one judge
// call at a time, whose judge answers the first call and stalls the next;
// it sends SIGINT once the second call has started, fails the test unless
// the run exits 130, and returns its stderr.
func interruptAfterFirstGroup(t *testing.T, out, in string) string {
	t.Helper()
	started := make(chan struct{}, 8)
	good := judgetest.KeywordJudge("WIN")
	srv := judgetest.NewServer(t, func(n int, r judgetest.Request) judgetest.Reply {
		started <- struct{}{}
		if n == 0 {
			return good(n, r)
		}
		return judgetest.Reply{Delay: time.Minute}
	})
	cmd := exec.Command(binary, "-o", out, "--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache",
		"--concurrency", "1", "--scorer", "ruler", in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("judge not called; stderr:\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s", err, stderr.String())
	}
	return stderr.String()
}
