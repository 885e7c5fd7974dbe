package collect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/game2048"
	"github.com/hone-rl/hone/collect/env/guess"
	"github.com/hone-rl/hone/collect/env/inbox"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/collect/env/stdio"
	"github.com/hone-rl/hone/collect/env/tictactoe"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/stageerr"
)

// EnvNames lists the built-in environments NewEnv knows, in a new slice
// the caller may keep or change.
func EnvNames() []string { return []string{"guess", "tictactoe", "2048", "inbox", "stdio", "mcp"} }

// NewEnv builds a built-in environment from its name and --env-opt
// settings. Every setting is read before the environment is opened, so
// that an unknown key (a typo) is refused at once, with the environment's
// valid keys, before a server or program is started. Opening (starting an
// MCP server or a stdio program and waiting for its answer, creating an
// inbox database) stops when ctx ends; Run bounds it by StartWithin. The
// errors do not repeat the environment's name: the caller's context names
// it. Those that blame the settings (an unknown name, key or value, a
// command or path that is not there) are marked stageerr.ErrUsage; a
// program or server that fails as it starts is a failure of the run.
func NewEnv(ctx context.Context, name string, opts map[string]string) (env.Env, error) {
	e, err := newEnv(ctx, name, opts)
	if err != nil && notThere(err) && !errors.Is(err, stageerr.ErrBadInput) {
		err = stageerr.Usage(err)
	}
	return e, err
}

// notThere reports whether err says that a program or path the settings
// name does not exist or may not be used: the setting is wrong, and no
// second try would pass it.
func notThere(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)
}

func newEnv(ctx context.Context, name string, opts map[string]string) (env.Env, error) {
	open, err := planEnv(name, opts)
	if err != nil {
		return nil, err
	}
	return open(ctx)
}

// CheckEnvOpts refuses an unknown environment, an unknown --env-opt key
// or a malformed value without opening anything (no program or server
// started, no file read), so that Run refuses them with its other usage
// errors, before those that need the environment.
func CheckEnvOpts(name string, opts map[string]string) error {
	_, err := planEnv(name, opts)
	return err
}

// planEnv reads the settings of an environment and returns the function
// that opens it.
func planEnv(name string, opts map[string]string) (func(ctx context.Context) (env.Env, error), error) {
	o := &settings{vals: opts}
	var open func(ctx context.Context) (env.Env, error)
	switch name {
	case "guess":
		n, turns := o.positive("n", 32), o.positive("turns", 5)
		open = func(context.Context) (env.Env, error) { return guess.New(n, turns), nil }
	case "tictactoe":
		opponent, reward := o.str("opponent", "random"), o.str("reward", tictactoe.RewardHone)
		threatStart := o.float("threat-start", 0)
		open = func(context.Context) (env.Env, error) {
			if err := checkReward(reward); err != nil {
				return nil, err
			}
			if threatStart < 0 || threatStart > 1 {
				return nil, stageerr.Usagef("option threat-start=%v: want a share in [0, 1]", threatStart)
			}
			t, err := tictactoe.New(opponent)
			if err != nil {
				return nil, stageerr.Usage(err)
			}
			t.Reward, t.ThreatStart = reward, threatStart
			return t, nil
		}
	case "2048":
		target, maxMoves, reward := o.positive("target", 64), o.positive("max-moves", 100), o.str("reward", game2048.RewardHone)
		open = func(context.Context) (env.Env, error) {
			if err := checkReward(reward); err != nil {
				return nil, err
			}
			if target < 4 || target > game2048.MaxTarget || target&(target-1) != 0 {
				// Every episode would fail on it (game2048 refuses the
				// scenario): refused at once instead.
				return nil, stageerr.Usagef("option target=%d: want a power of two from 4 to %d (a tile a 4×4 board can make)", target, game2048.MaxTarget)
			}
			g := game2048.New(target, maxMoves)
			g.Reward = reward
			return g, nil
		}
	case "inbox":
		seed, db := o.int("inbox-seed", 1), o.str("db", "")
		open = func(ctx context.Context) (env.Env, error) {
			ib, err := inbox.Open(ctx, int64(seed), db)
			if err != nil {
				return nil, err
			}
			return ib, nil
		}
	case "mcp":
		cmd, url, system, tasks := o.str("cmd", ""), o.str("url", ""), o.str("system", ""), o.str("tasks", "")
		open = func(ctx context.Context) (env.Env, error) { return openMCP(ctx, cmd, url, system, tasks) }
	case "stdio":
		cmd, dir := o.str("cmd", ""), o.str("dir", "")
		open = func(ctx context.Context) (env.Env, error) { return openStdio(ctx, cmd, dir) }
	default:
		// Not named here: the caller names it ("environment bogus: ..."),
		// as it does every other refusal of the settings.
		return nil, stageerr.Usagef("no such environment (have %s)", strings.Join(EnvNames(), ", "))
	}
	if err := o.check(); err != nil {
		return nil, stageerr.Usage(err)
	}
	return open, nil
}

// checkReward refuses a game reward shape other than Hone's and ART's.
func checkReward(reward string) error {
	if reward != game2048.RewardHone && reward != game2048.RewardART {
		return stageerr.Usagef("option reward=%q: want %s (the default) or %s (OpenPipe ART's example rewards)", reward, game2048.RewardHone, game2048.RewardART)
	}
	return nil
}

// DefaultStartTimeout bounds how long an environment may take to start
// (--start-timeout): a program that never answers its hello fails the run
// instead of hanging it.
const DefaultStartTimeout = time.Minute

// StartWithin calls start with ctx bounded by timeout, the start of an
// environment or of an MCP server (hone-collect scenarios). An error
// caused by the timeout says so, naming --start-timeout: "context
// deadline exceeded" alone did not say what ran out.
func StartWithin(ctx context.Context, timeout time.Duration, start func(ctx context.Context) error) error {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := start(sctx)
	if err != nil && ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (no answer within --start-timeout %v)", err, timeout)
	}
	return err
}

// openMCP connects to an MCP server (a command speaking stdio, or a URL),
// with the tasks of a scenario file when one is named.
func openMCP(ctx context.Context, cmd, url, system, tasks string) (env.Env, error) {
	argv, err := stdio.Split(cmd)
	if err != nil {
		return nil, stageerr.Usagef("--env-opt cmd: %w", err)
	}
	mo := mcpenv.Options{Command: argv, URL: url, System: system}
	if tasks != "" {
		if mo.Tasks, err = ReadScenarios(ctx, tasks); err != nil {
			return nil, stageerr.BadInput(err)
		}
		mo.TasksName = fileset.DisplayName(tasks)
	}
	m, err := mcpenv.Open(ctx, mo)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// openStdio starts an external environment program speaking JSON lines.
func openStdio(ctx context.Context, cmd, dir string) (env.Env, error) {
	argv, err := stdio.Split(cmd)
	if err != nil {
		return nil, stageerr.Usagef("--env-opt cmd: %w", err)
	}
	if len(argv) == 0 {
		return nil, stageerr.Usagef("needs --env-opt cmd='PROGRAM ARGS...'")
	}
	// Checked here: a working folder that is not there fails the start
	// with the program's path ("fork/exec /usr/bin/python3: no such file or
	// directory"), which sends the reader looking for the wrong thing.
	if dir != "" {
		fi, err := os.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, stageerr.Usagef("dir=%s: no such folder", dir)
		}
		if err != nil {
			return nil, stageerr.Usage(fmt.Errorf("dir=%s: %w", dir, err))
		}
		if !fi.IsDir() {
			return nil, stageerr.Usagef("dir=%s: not a folder", dir)
		}
	}
	s, err := stdio.New(ctx, argv, dir)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// settings reads the --env-opt values of one environment, remembering the
// keys the environment knows, in the order it reads them, and the first
// malformed value.
type settings struct {
	vals map[string]string
	keys []string
	bad  error
}

func (s *settings) str(key, def string) string {
	s.keys = append(s.keys, key)
	if v, ok := s.vals[key]; ok {
		return v
	}
	return def
}

func (s *settings) int(key string, def int) int {
	s.keys = append(s.keys, key)
	v, ok := s.vals[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		if s.bad == nil {
			s.bad = fmt.Errorf("option %s=%q is not an integer", key, v)
		}
		return def
	}
	return n
}

// positive reads an integer option that must be at least 1 (a count):
// zero or less is refused, not quietly replaced by the default.
func (s *settings) positive(key string, def int) int {
	n := s.int(key, def)
	if n < 1 && s.bad == nil {
		s.bad = fmt.Errorf("option %s=%d: want a positive integer", key, n)
	}
	return n
}

func (s *settings) float(key string, def float64) float64 {
	s.keys = append(s.keys, key)
	v, ok := s.vals[key]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		if s.bad == nil {
			s.bad = fmt.Errorf("option %s=%q is not a number", key, v)
		}
		return def
	}
	return f
}

// check refuses the first malformed value, then any key the environment
// did not read, listing the keys it knows.
func (s *settings) check() error {
	if s.bad != nil {
		return s.bad
	}
	var unknown []string
	for k := range s.vals {
		if !slices.Contains(s.keys, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	what := "option"
	if len(unknown) > 1 {
		what = "options"
	}
	return fmt.Errorf("unknown %s %s; valid: %s", what, strings.Join(unknown, ", "), strings.Join(s.keys, ", "))
}
