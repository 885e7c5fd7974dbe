// Package mcpenv turns any MCP server into an environment: its tools
// (listed once, over stdio to a command or over streamable HTTP) become
// the agent's tools, and tasks come from a scenario file. An episode asks
// the task as the user message, runs each tool call on the server and
// ends when the agent answers without a tool call.
//
// A task's payload is {"task": "...", "answer": "...", "difficulty": 3};
// "answer" and "difficulty" (1 to 5, the task writer's rating, carried
// only) are optional. With an answer the reward is 1 when the final answer
// contains it (case-insensitively) and 0 otherwise; without it the reward
// is 0 and scoring is left to hone-score (a formula or RULER). Metrics: answered,
// correct, tool_errors (calls the server reported as errors).
//
// A payload may also carry "solution": {"calls": [{"name", "arguments"}],
// "answer"}, which the scripted policy "replay" plays back (policy.go).
package mcpenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/procgroup"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Options says how to reach the server.
type Options struct {
	Command []string // a stdio server: program and arguments
	URL     string   // or a streamable HTTP endpoint
	Tasks   []env.Scenario
	// TasksName names the file Tasks came from, in errors.
	TasksName string
	System    string // system prompt ("" for a default)
}

// Env is the MCP server all episodes share: one session at a time,
// replaced when it is lost (server.go).
type Env struct {
	opts   Options
	group  *procgroup.Set
	tasks  []env.Scenario
	system string

	srvMu    sync.Mutex
	srv      *server           // nil after a failed restart
	tools    []trajectory.Tool // the last server's (Tools)
	restarts int               // restarts since a server last answered a call
	lastErr  error             // why the last restart failed
	gaveUp   error             // set once restarts reached maxRestarts
	closed   bool

	log          *slog.Logger  // SetLog's; nil until then
	startTimeout time.Duration // SetStartTimeout's; 0 until then

	// asked maps a task text to the scenario last started with it, so a
	// replay policy, which sees only the conversation, finds its solution.
	mu    sync.Mutex
	asked map[string]asked
}

// Open connects and lists the server's tools.
func Open(ctx context.Context, o Options) (*Env, error) {
	switch {
	case len(o.Command) > 0 && o.URL != "":
		return nil, stageerr.Usagef("mcp: give a command or a URL, not both")
	case len(o.Command) == 0 && o.URL == "":
		return nil, stageerr.Usagef("mcp: needs --env-opt cmd='SERVER ARGS' or --env-opt url=http://...")
	}
	if o.URL != "" {
		// A URL without its scheme (localhost:3000/mcp) otherwise reaches
		// the transport and reads as a server out of reach (exit 1).
		if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, stageerr.Usagef("mcp: url %q: want an http:// or https:// URL, e.g. http://localhost:3000/mcp", o.URL)
		}
	}
	e := &Env{opts: o, group: procgroup.SetFrom(ctx), tasks: o.Tasks, system: o.System}
	if e.system == "" {
		e.system = "You complete tasks with the tools you are given. When done, answer without calling a tool."
	}
	s, err := dial(ctx, o, e.group)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	if s.tools, err = listTools(ctx, s); err != nil {
		s.close()
		return nil, fmt.Errorf("mcp: %w", err)
	}
	e.srv, e.tools = s, s.tools
	return e, nil
}

// SetLog gives the environment the run's log, where a restarted server
// that lists other tools is said (nil: none).
func (e *Env) SetLog(l *slog.Logger) {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	e.log = l
}

// SetStartTimeout bounds each restart of the server, as the run's start
// (--start-timeout) bounded the first: 0 leaves a restart the episode's
// time alone.
func (e *Env) SetStartTimeout(d time.Duration) {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	e.startTimeout = d
}

// listTools lists the server's tools in the agent's shape. A server that
// offers none is an error: an episode on it could only answer; so is one
// that lists a name twice.
func listTools(ctx context.Context, s *server) ([]trajectory.Tool, error) {
	var tools []trajectory.Tool
	seen := map[string]bool{}
	for tool, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w%s%s", err, s.out.notJSON(err), s.tail.quote())
		}
		if seen[tool.Name] {
			// The model would be offered both, a call to either checked
			// against the first's schema and run as whichever the server
			// picks by the name alone.
			return nil, fmt.Errorf("the server lists tool %q twice (a tool's name must be unique, a call names only it)", tool.Name)
		}
		seen[tool.Name] = true
		params := ""
		if tool.InputSchema != nil {
			b, err := json.Marshal(tool.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: schema: %w", tool.Name, err)
			}
			params = string(b)
		}
		tools = append(tools, trajectory.Tool{Type: "function", Name: tool.Name, Description: tool.Description, Parameters: params})
	}
	if len(tools) == 0 {
		return nil, errors.New("the server offers no tools")
	}
	return tools, nil
}

// Tools returns the server's tools in the agent's shape, as the server
// last started (or connected) listed them.
func (e *Env) Tools() []trajectory.Tool {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	return e.tools
}

// Resource is one resource an MCP server lists (resources/list), in the
// protocol's field names: what a task writer is shown besides the tools.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// Resources lists the server's resources, following the listing's pages;
// a server that does not declare the resources capability has none.
func (e *Env) Resources(ctx context.Context) ([]Resource, error) {
	s, err := e.current(ctx)
	if err != nil {
		return nil, err
	}
	if ir := s.session.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil {
		return nil, nil
	}
	var out []Resource
	for r, err := range s.session.Resources(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: list resources: %w", err)
		}
		out = append(out, Resource{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType})
	}
	return out, nil
}

// Close ends the session, and a stdio server with all it started: the
// session's close gives the server its closed stdin and a second to exit,
// then what is left of its process group is killed.
func (e *Env) Close() error {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	e.closed = true
	if e.srv == nil {
		return nil
	}
	err := e.srv.close()
	e.srv = nil
	return err
}

// Name implements env.Env.
func (e *Env) Name() string { return "mcp" }

// RewardRange implements env.Env.
func (e *Env) RewardRange() (float64, float64) { return 0, 1 }

// Scenarios implements env.Env: the tasks given, cycled to n, in order.
func (e *Env) Scenarios(_ context.Context, _ int64, n int) ([]env.Scenario, error) {
	if len(e.tasks) == 0 {
		// A missing setting, not a failure of the server: bad usage (exit 2).
		return nil, stageerr.Usagef("mcp: no tasks: give --scenarios FILE or --env-opt tasks=FILE")
	}
	return cycle(e.tasks, e.tasks, n), nil
}

// ScenariosOf implements env.SplitSource: the tasks of split (those
// without one are train), cycled to n. Chosen before cycling, so that
// --groups repeats the split's tasks rather than drops the others' places.
func (e *Env) ScenariosOf(ctx context.Context, seed int64, n int, split string) ([]env.Scenario, error) {
	if len(e.tasks) == 0 {
		return e.Scenarios(ctx, seed, n)
	}
	tasks := env.OfSplit(e.tasks, split)
	if len(tasks) == 0 {
		return nil, stageerr.BadInputf("mcp: tasks %s: none of its %d tasks is of split %q (it has %s)", e.opts.TasksName, len(e.tasks), split, env.Splits(e.tasks))
	}
	return cycle(tasks, e.tasks, n), nil
}

// cycle repeats tasks in order to n scenarios. A repeat's id names no
// task of all (the whole file): a split's repeat named as a task of
// another split would be two scenarios of one file with one id.
func cycle(tasks, all []env.Scenario, n int) []env.Scenario {
	out := make([]env.Scenario, n)
	used := map[string]bool{}
	for _, t := range all {
		used[t.ID] = true
	}
	for i := range out {
		out[i] = tasks[i%len(tasks)]
		if i >= len(tasks) {
			// A repeat's id is the task's with its round, "-N", taken again
			// while that names another scenario (a task named "france-1").
			id := out[i].ID
			for id == out[i].ID || used[id] {
				id = fmt.Sprintf("%s-%d", id, i/len(tasks))
			}
			used[id] = true
			out[i].ID = id
		}
	}
	return out
}

// Payload is a task's payload.
type Payload struct {
	Task   string `json:"task"`
	Answer string `json:"answer,omitempty"`
	// Difficulty, 1 to 5, is the task writer's rating (hone-collect
	// scenarios); the environment only carries it.
	Difficulty int       `json:"difficulty,omitempty"`
	Solution   *Solution `json:"solution,omitempty"`
}

// NewEpisode implements env.Env.
func (e *Env) NewEpisode(ctx context.Context, sc env.Scenario, _ int64) (env.Episode, error) {
	var p Payload
	if err := json.Unmarshal(sc.Payload, &p); err != nil {
		return nil, fmt.Errorf("mcp: scenario %s: payload: %w (want {\"task\": \"...\", \"answer\": \"...\"})", sc.ID, err)
	}
	if p.Task == "" {
		return nil, fmt.Errorf("mcp: scenario %s: payload has no \"task\" (want {\"task\": \"...\", \"answer\": \"...\"}; only task is required)", sc.ID)
	}
	// The episode keeps the server it starts on: one lost meanwhile fails
	// it rather than a new server seeing its calls from the middle on.
	s, err := e.current(ctx)
	if err != nil {
		return nil, err
	}
	e.remember(sc.ID, p)
	return &episode{e: e, srv: s, p: p}, nil
}

type episode struct {
	e                 *Env
	srv               *server
	p                 Payload
	answered, correct bool
	toolErrors        int
}

func (ep *episode) Reset(context.Context) (env.Observation, error) {
	return env.Observation{
		Messages: []trajectory.Message{{Role: "system", Content: ep.e.system}, env.User(ep.p.Task)},
		Tools:    ep.srv.tools,
	}, nil
}

func (ep *episode) Step(ctx context.Context, t env.Turn) (env.Feedback, error) {
	if len(t.Message.ToolCalls) == 0 {
		ep.answered = true
		ep.correct = ep.p.Answer != "" && strings.Contains(strings.ToLower(t.Message.Content), strings.ToLower(ep.p.Answer))
		return env.Feedback{Done: true}, nil
	}
	var out []trajectory.Message
	for _, c := range t.Calls {
		// CheckCall validated the arguments. Numbers stay the model's
		// text (json.Number): read as float64 and written again, an
		// integer past 2^53 (an id) would reach the tool changed.
		var args map[string]any
		d := json.NewDecoder(strings.NewReader(c.Arguments))
		d.UseNumber()
		d.Decode(&args)
		if args == nil {
			// Empty or null arguments, which CheckCall takes as {}: the
			// protocol's arguments are an object, and the SDK sends a nil
			// map as null, which a server checking its params against
			// the protocol's schema rejects.
			args = map[string]any{}
		}
		res, err := ep.srv.session.CallTool(ctx, &mcp.CallToolParams{Name: c.Name, Arguments: args})
		if err != nil {
			// A protocol error on one call (the server's error answer) is
			// the model's feedback, not the end of the episode; a call
			// with no answer (the session lost: a server that exited, a
			// broken connection) fails the episode, and the next episode
			// gets a new server.
			var rejected *jsonrpc.Error
			if ctx.Err() != nil {
				// The episode's time ran out with the call unanswered: a
				// slow tool, or a server that no longer answers anything
				// (deadlocked, a sequential server stuck in one call). The
				// ping tells them apart, off the episode's clock so that
				// --episode-timeout still holds: one unanswered marks the
				// server lost, and the next episode gets a new one rather
				// than hanging on it too.
				go ep.srv.gone(context.WithoutCancel(ctx))
				return env.Feedback{}, fmt.Errorf("mcp: %s: %w", c.Name, err)
			}
			if !errors.As(err, &rejected) || errors.Is(err, mcp.ErrConnectionClosed) {
				if ep.srv.gone(ctx) {
					return env.Feedback{}, fmt.Errorf("mcp: %s: the server was lost (later episodes get a new one): %w%s%s", c.Name, err, ep.srv.out.notJSON(err), ep.srv.tail.quote())
				}
				return env.Feedback{}, fmt.Errorf("mcp: %s: %w", c.Name, err)
			}
			ep.srv.answered.Store(true)
			ep.toolErrors++
			out = append(out, env.ToolResult(c.ID, c.Name, "error: "+err.Error()))
			continue
		}
		ep.srv.answered.Store(true)
		var text []string
		for _, part := range res.Content {
			if tc, ok := part.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			} else if b, err := json.Marshal(part); err == nil {
				text = append(text, string(b))
			}
		}
		if len(res.Content) == 0 && res.StructuredContent != nil {
			// Structured content alone: the protocol asks a server to send
			// its JSON as text too, "for backwards compatibility", and one
			// that does not would leave the model an empty answer.
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				text = append(text, string(b))
			}
		}
		s := strings.Join(text, "\n")
		if res.IsError {
			ep.toolErrors++
			s = "error: " + s
		}
		out = append(out, env.ToolResult(c.ID, c.Name, s))
	}
	return env.Feedback{Messages: out}, nil
}

func (ep *episode) Outcome() env.Outcome {
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	return env.Outcome{Reward: b(ep.correct), Metrics: map[string]float64{
		"answered": b(ep.answered), "correct": b(ep.correct), "tool_errors": float64(ep.toolErrors),
	}}
}

func (ep *episode) Close() error { return nil }
