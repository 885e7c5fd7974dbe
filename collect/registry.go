package collect

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/game2048"
	"github.com/hone-rl/hone/collect/env/guess"
	"github.com/hone-rl/hone/collect/env/inbox"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/collect/env/stdio"
	"github.com/hone-rl/hone/collect/env/tictactoe"
)

// EnvNames lists the built-in environments NewEnv knows.
var EnvNames = []string{"guess", "tictactoe", "2048", "inbox", "stdio", "mcp"}

// NewEnv builds a built-in environment from its name and --env-opt
// settings. Unknown settings are an error, so a typo is not ignored.
func NewEnv(name string, opts map[string]string) (env.Env, error) {
	o := settings(maps.Clone(opts))
	if o == nil {
		o = settings{}
	}
	var e env.Env
	switch name {
	case "guess":
		n, turns := o.int("n", 32), o.int("turns", 5)
		e = guess.New(n, turns)
	case "tictactoe":
		t, err := tictactoe.New(o.str("opponent", "random"))
		if err != nil {
			return nil, err
		}
		e = t
	case "2048":
		e = game2048.New(o.int("target", 64), o.int("max-moves", 100))
	case "inbox":
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ib, err := inbox.Open(ctx, int64(o.int("inbox-seed", 1)), o.str("db", ""))
		if err != nil {
			return nil, err
		}
		e = ib
	case "mcp":
		argv, err := stdio.Split(o.str("cmd", ""))
		if err != nil {
			return nil, err
		}
		mo := mcpenv.Options{Command: argv, URL: o.str("url", ""), System: o.str("system", "")}
		if path := o.str("tasks", ""); path != "" {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if mo.Tasks, err = ReadScenarios(ctx, path); err != nil {
				return nil, err
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m, err := mcpenv.Open(ctx, mo)
		if err != nil {
			return nil, err
		}
		e = m
	case "stdio":
		argv, err := stdio.Split(o.str("cmd", ""))
		if err != nil {
			return nil, err
		}
		if len(argv) == 0 {
			return nil, fmt.Errorf("stdio needs --env-opt cmd='PROGRAM ARGS...'")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := stdio.New(ctx, argv, o.str("dir", ""))
		if err != nil {
			return nil, err
		}
		e = s
	default:
		return nil, fmt.Errorf("unknown environment %q (have %v)", name, EnvNames)
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return e, nil
}

// settings reads --env-opt values, remembering which were used and the
// first malformed one.
type settings map[string]string

func (s settings) str(key, def string) string {
	if v, ok := s[key]; ok {
		delete(s, key)
		return v
	}
	return def
}

func (s settings) int(key string, def int) int {
	v, ok := s[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		s["!bad"] = fmt.Sprintf("%s=%q is not an integer", key, v)
		delete(s, key)
		return def
	}
	delete(s, key)
	return n
}

func (s settings) check() error {
	if bad, ok := s["!bad"]; ok {
		return fmt.Errorf("--env-opt %s", bad)
	}
	for k := range s {
		return fmt.Errorf("unknown --env-opt %q", k)
	}
	return nil
}
