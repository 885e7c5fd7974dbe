package collect_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/openaitest"
)

// TestEnvOptUnknownKey gives every built-in environment an --env-opt key
// it does not know: the error names the key and lists the environment's
// valid keys (Run names the environment), and comes before anything is
// started (the stdio and mcp environments are given no program or URL).
func TestEnvOptUnknownKey(t *testing.T) {
	valid := map[string]string{
		"guess":     "n, turns",
		"tictactoe": "opponent, reward, threat-start",
		"2048":      "target, max-moves, reward",
		"inbox":     "inbox-seed, db",
		"stdio":     "cmd, dir",
		"mcp":       "cmd, url, system, tasks",
	}
	for _, name := range collect.EnvNames() {
		keys, ok := valid[name]
		if !ok {
			t.Errorf("environment %s has no expected keys in this test", name)
			continue
		}
		_, err := collect.NewEnv(context.Background(), name, map[string]string{"foo": "1"})
		want := `unknown option "foo"; valid: ` + keys
		if err == nil || err.Error() != want {
			t.Errorf("%s --env-opt foo=1: %v, want %q", name, err, want)
		}
	}
	_, err := collect.NewEnv(context.Background(), "guess", map[string]string{"n": "many", "foo": "1", "bar": "2"})
	if want := `option n="many" is not an integer`; err == nil || err.Error() != want {
		t.Errorf("malformed n: %v, want %q", err, want)
	}
	_, err = collect.NewEnv(context.Background(), "guess", map[string]string{"foo": "1", "bar": "2"})
	if want := `unknown options "bar", "foo"; valid: n, turns`; err == nil || err.Error() != want {
		t.Errorf("two unknown keys: %v, want %q", err, want)
	}
	if e, err := collect.NewEnv(context.Background(), "guess", map[string]string{"n": "8", "turns": "3"}); err != nil || e.Name() != "guess" {
		t.Errorf("valid keys refused: %v", err)
	}
}

// TestSamplingFlags parses the flags as hone-collect does: --help shows
// the sampling defaults in words (not NaN), an unset --top-p sends no
// top_p, and --temperature reaches every request.
func TestSamplingFlags(t *testing.T) {
	var o collect.Options
	fs := pflag.NewFlagSet("hone-collect", pflag.ContinueOnError)
	o.AddFlags(fs)
	help := fs.FlagUsages()
	for _, bad := range []string{"NaN", "(default [])", "stringToString"} {
		if strings.Contains(help, bad) {
			t.Errorf("--help shows %q:\n%s", bad, help)
		}
	}
	for _, line := range strings.Split(help, "\n") {
		if strings.Contains(line, "--temperature") && !strings.HasSuffix(line, "(default: the server's)") {
			t.Errorf("--temperature's default reads %q, want the server's", line)
		}
	}

	srv := openaitest.New(bisectReply)
	defer srv.Close()
	if err := fs.Parse([]string{"--env", "guess", "--groups", "1", "-G", "1", "--model", "m", "--base-url", srv.BaseURL(), "--temperature", "0.7"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o.Out = &out
	if err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model call")
	}
	for _, r := range reqs {
		if r.Temperature == nil || *r.Temperature != 0.7 || r.TopP != nil {
			t.Fatalf("request's sampling options: %s", r.Raw)
		}
	}
}

// TestEnvNamesFresh: a caller changing the list it got changes nobody
// else's (it was an exported package variable).
func TestEnvNamesFresh(t *testing.T) {
	names := collect.EnvNames()
	names[0] = "changed"
	if again := collect.EnvNames(); again[0] != "guess" {
		t.Fatalf("EnvNames after a caller changed its copy: %v", again)
	}
}

// The games take reward=art (OpenPipe ART's example reward shapes, which
// widen the reward range) and refuse any other shape, naming the choices.
func TestGameRewardOption(t *testing.T) {
	for name, want := range map[string][2]float64{"2048": {-1, 2}, "tictactoe": {-100, 1}} {
		e, err := collect.NewEnv(context.Background(), name, map[string]string{"reward": "art"})
		if err != nil {
			t.Fatalf("%s reward=art: %v", name, err)
		}
		if lo, hi := e.RewardRange(); lo != want[0] || hi != want[1] {
			t.Errorf("%s reward=art: range [%v, %v], want %v", name, lo, hi, want)
		}
		e, err = collect.NewEnv(context.Background(), name, nil)
		if lo, hi := e.RewardRange(); err != nil || lo != -1 || hi != 1 {
			t.Errorf("%s default: %v, range [%v, %v], want [-1, 1]", name, err, lo, hi)
		}
		_, err = collect.NewEnv(context.Background(), name, map[string]string{"reward": "ruler"})
		if err == nil || !strings.Contains(err.Error(), `reward="ruler": want hone (the default) or art`) {
			t.Errorf("%s reward=ruler: %v", name, err)
		}
	}
}

// TestThreatStartOption: tictactoe's threat-start is a share in [0, 1];
// anything else is refused naming the option.
func TestThreatStartOption(t *testing.T) {
	e, err := collect.NewEnv(context.Background(), "tictactoe", map[string]string{"threat-start": "0.5", "opponent": "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	scs, err := e.Scenarios(context.Background(), 3, 40)
	if err != nil {
		t.Fatal(err)
	}
	starts := 0
	for _, sc := range scs {
		if strings.Contains(string(sc.Payload), `"start"`) {
			starts++
		}
	}
	if starts < 8 || starts > 32 {
		t.Errorf("threat-start=0.5: %d of 40 scenarios start mid-game, want about half", starts)
	}
	for v, want := range map[string]string{"1.5": "option threat-start=1.5: want a share in [0, 1]", "half": `option threat-start="half" is not a number`, "NaN": `option threat-start="NaN" is not a number`} {
		_, err := collect.NewEnv(context.Background(), "tictactoe", map[string]string{"threat-start": v})
		if err == nil || err.Error() != want {
			t.Errorf("threat-start=%s: %v, want %q", v, err, want)
		}
	}
}

// TestCountOptionsRefused: a count option of zero or less (guess's n and
// turns, 2048's target and max-moves) is refused when the environment is
// built, naming it, rather than quietly replaced by its default; and a
// 2048 target no tile can be (not a power of two from 4 to 131072) too, where every
// episode would otherwise fail on it.
func TestCountOptionsRefused(t *testing.T) {
	for _, c := range []struct{ env, key, val, want string }{
		{"guess", "n", "-5", "option n=-5: want a positive integer"},
		{"guess", "turns", "0", "option turns=0: want a positive integer"},
		{"2048", "max-moves", "0", "option max-moves=0: want a positive integer"},
		{"2048", "target", "0", "option target=0: want a positive integer"},
		{"2048", "target", "100", "option target=100: want a power of two from 4 to 131072"},
		{"2048", "target", "2", "option target=2: want a power of two from 4 to 131072"},
	} {
		_, err := collect.NewEnv(context.Background(), c.env, map[string]string{c.key: c.val})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s --env-opt %s=%s: %v, want %q", c.env, c.key, c.val, err, c.want)
		}
	}
	for env, opts := range map[string]map[string]string{"guess": {"n": "8", "turns": "3"}, "2048": {"target": "128", "max-moves": "50"}} {
		if _, err := collect.NewEnv(context.Background(), env, opts); err != nil {
			t.Errorf("%s %v: %v", env, opts, err)
		}
	}
}

// An --env-opt value is everything after the first "=", as written: a
// command or a system prompt holds quotes, commas and "=" of its own.
// pflag's string-to-string flag, which --env-opt was, read a value with
// one "=" with its leading and trailing '"' cut off (so cmd='python3
// env.py --name "x"' lost its last quote and was refused as unbalanced,
// and a prompt ending in a quotation lost it silently), and a value with
// more as a CSV record (split at its commas, and refused with a CSV
// parse error for a quote inside).
func TestEnvOptValueAsWritten(t *testing.T) {
	for _, v := range []string{
		`cmd=python3 env.py --name "x"`,
		`system="Answer in one word."`,
		`system=Reply as key=value, one per line.`,
		`cmd=python3 -c "import env; env.main(n=3)"`,
		`url=http://localhost:3000/mcp?a=1,b=2`,
	} {
		var o collect.Options
		fs := pflag.NewFlagSet("hone-collect", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--env-opt", v, "--env-opt", "n=3"}); err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		key, want, _ := strings.Cut(v, "=")
		if len(o.EnvOpts) != 2 || o.EnvOpts[key] != want || o.EnvOpts["n"] != "3" {
			t.Errorf("--env-opt %s read as %q, want %s=%q and n=3", v, o.EnvOpts, key, want)
		}
	}
	var o collect.Options
	fs := pflag.NewFlagSet("hone-collect", pflag.ContinueOnError)
	o.AddFlags(fs)
	for _, bad := range []string{"n", "=3"} {
		if err := fs.Parse([]string{"--env-opt", bad}); err == nil {
			t.Errorf("--env-opt %q taken, want KEY=VALUE refused", bad)
		}
	}
}
