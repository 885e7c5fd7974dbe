package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/internal/jsonnan"
	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/procgroup"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Env is an environment behind a command.
type Env struct {
	argv     []string
	dir      string
	name     string
	lo, hi   float64
	policies []string

	// MaxLineBytes caps one line the program writes (a response); a
	// longer one fails the request rather than growing without bound.
	// Zero means DefaultMaxLineBytes.
	MaxLineBytes int

	logMu sync.Mutex
	log   *slog.Logger // SetLog's; nil until then
	// nulls are the metric names a response gave as null, said once
	// each in log.
	nulls map[string]bool
}

// SetLog gives the environment the run's log, where a metric the program
// sent as null is said, once per name (nil: none).
func (e *Env) SetLog(l *slog.Logger) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	e.log = l
}

// warnNull says, the first time a response gives metric name as null,
// that it is left out: a program sending None where a metric does not
// apply means it so, but one sending it by mistake (a grader that
// returned nothing) learns why the metric's count is short.
func (e *Env) warnNull(name, scenario string) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	if e.nulls[name] || e.log == nil {
		return
	}
	if e.nulls == nil {
		e.nulls = map[string]bool{}
	}
	e.nulls[name] = true
	e.log.Warn("a metric was null: it is left out of the trajectories where it is, and means over the run count only the episodes that report it (said once per metric)",
		"env", e.name, "metric", name, "scenario", scenario)
}

// DefaultMaxLineBytes is the longest response line read by default.
const DefaultMaxLineBytes = 64 << 20

// New starts the command once to ask for its name, reward range and
// policies. argv is the program and its arguments; dir its working
// directory ("" for the current one).
func New(ctx context.Context, argv []string, dir string) (*Env, error) {
	if len(argv) == 0 {
		return nil, errors.New("stdio: empty command")
	}
	e := &Env{argv: argv, dir: dir}
	p, err := e.start(ctx)
	if err != nil {
		return nil, err
	}
	defer p.close()
	var h struct {
		Name        string          `json:"name"`
		RewardRange json.RawMessage `json:"reward_range"`
		Policies    []string        `json:"policies"`
	}
	if err := p.call(ctx, map[string]any{"op": "hello"}, &h); err != nil {
		// The run does not start: stop the program, then quote what it
		// wrote on stderr (all of it, now that it has exited), as the
		// errors of a program that exited already do.
		p.close()
		if s := p.stderr.Quote(); s != "" && !strings.HasSuffix(err.Error(), s) {
			err = fmt.Errorf("%w%s", err, s)
		}
		return nil, err
	}
	e.name, e.policies = h.Name, h.Policies
	if e.name == "" {
		e.name = "stdio"
	}
	if e.lo, e.hi, err = rewardRange(h.RewardRange); err != nil {
		return nil, fmt.Errorf("stdio: hello: %w", err)
	}
	return e, nil
}

// rewardRange reads hello's reward_range: two numbers, low then high, or
// none (left out or null: ±1e9). Any other value is refused naming the
// field, where one of the wrong length was ignored without a word.
func rewardRange(raw json.RawMessage) (lo, hi float64, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return -1e9, 1e9, nil
	}
	var r []float64
	if json.Unmarshal(raw, &r) != nil || len(r) != 2 {
		return 0, 0, fmt.Errorf("reward_range is %s: want two numbers, [low, high] (or leave it out)", clip(raw))
	}
	if r[0] > r[1] {
		return 0, 0, fmt.Errorf("reward_range is %s, its low above its high: want [low, high]", clip(raw))
	}
	return r[0], r[1], nil
}

// Split splits a command line on spaces, honouring single and double
// quotes (no escapes), for --env-opt cmd='python3 env.py'. Its errors
// name no flag or environment: the MCP environment and --mcp-cmd split
// their commands with it too, and the caller names which was wrong.
func Split(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote, has := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, has = c, true
		case c == ' ' || c == '\t':
			if in || has {
				out = append(out, cur.String())
				cur.Reset()
			}
			in, has = false, false
			continue
		default:
			cur.WriteByte(c)
		}
		in = true
	}
	if quote != 0 {
		return nil, fmt.Errorf("unbalanced quote in %q", s)
	}
	if in || has {
		out = append(out, cur.String())
	}
	return out, nil
}

// Name implements env.Env.
func (e *Env) Name() string { return e.name }

// RewardRange implements env.Env.
func (e *Env) RewardRange() (float64, float64) { return e.lo, e.hi }

// Scenarios implements env.Env.
func (e *Env) Scenarios(ctx context.Context, seed int64, n int) ([]env.Scenario, error) {
	return e.ScenariosOf(ctx, seed, n, "")
}

// ScenariosOf implements env.SplitSource: the program is asked for the
// scenarios of split ("split" in the request, left out for ""), and of
// its answer those labelled another split are dropped: its labels are
// its data, and a program that ignores the request (labels all train)
// would otherwise have its train scenarios played as held out. One it
// leaves unlabelled was made for the split asked and is labelled so.
func (e *Env) ScenariosOf(ctx context.Context, seed int64, n int, split string) ([]env.Scenario, error) {
	p, err := e.start(ctx)
	if err != nil {
		return nil, err
	}
	defer p.close()
	var r struct {
		Scenarios []env.Scenario `json:"scenarios"`
	}
	req := map[string]any{"op": "scenarios", "seed": seed, "n": n}
	if split != "" {
		req["split"] = split
	}
	if err := p.call(ctx, req, &r); err != nil {
		return nil, err
	}
	if split != "" {
		all := r.Scenarios
		r.Scenarios = nil
		for i, sc := range all {
			switch sc.Split {
			case "", trajectory.SplitTrain, trajectory.SplitVal, trajectory.SplitTest:
			default:
				// Refused, not dropped as of another split: a typo
				// ("vall") would otherwise leave the run short unsaid.
				return nil, fmt.Errorf("stdio: scenario %d (%s): split %q is not train, val or test", i, sc.ID, sc.Split)
			}
			if sc.Split == "" || sc.Split == split {
				sc.Split = split
				r.Scenarios = append(r.Scenarios, sc)
			}
		}
		if len(r.Scenarios) == 0 && len(all) > 0 {
			// Say what to change: a program written before it knew of
			// --split labels everything train and never reads the field.
			return nil, stageerr.BadInputf("stdio: %v: asked for split %q, it answered none of its %d scenarios in it (it has %s): "+
				"the scenarios request carries \"split\": %q; answer scenarios of that split, or without one (they are labelled with it) "+
				"(docs/stdio-env.md)", e.argv, split, len(all), env.Splits(all), split)
		}
	}
	// n is what the run asked for (--groups): a program that answers
	// more (a fixed list, whatever n says) gets its first n played, not
	// a run larger than the user set.
	if n >= 0 && len(r.Scenarios) > n {
		r.Scenarios = r.Scenarios[:n]
	}
	seen := make(map[string]int, len(r.Scenarios))
	for i := range r.Scenarios {
		if r.Scenarios[i].ID == "" {
			return nil, fmt.Errorf("stdio: scenario %d has no id", i)
		}
		// Refused now, as in a scenarios file: the rows of two scenarios
		// with one id could not be told apart, and --scenarios on the
		// output would play only the first.
		if prev, ok := seen[r.Scenarios[i].ID]; ok {
			return nil, fmt.Errorf("stdio: scenarios %d and %d have the same id %q; each needs an id of its own", prev, i, r.Scenarios[i].ID)
		}
		seen[r.Scenarios[i].ID] = i
		switch sp := r.Scenarios[i].Split; sp {
		case "", trajectory.SplitTrain, trajectory.SplitVal, trajectory.SplitTest:
		default:
			// Refused now: its rows could not be written once played.
			return nil, fmt.Errorf("stdio: scenario %s: split %q is not train, val or test", r.Scenarios[i].ID, sp)
		}
		r.Scenarios[i].Env = e.name
	}
	return r.Scenarios, nil
}

// NewEpisode implements env.Env: one process per episode.
func (e *Env) NewEpisode(ctx context.Context, sc env.Scenario, seed int64) (env.Episode, error) {
	p, err := e.start(ctx)
	if err != nil {
		return nil, err
	}
	return &episode{e: e, p: p, sc: sc, seed: seed}, nil
}

type episode struct {
	e       *Env
	p       *proc
	sc      env.Scenario
	seed    int64
	outcome env.Outcome
	nulls   []string // the metrics outcome left out, given as null
}

// wireObs is a reset or step response; messages and tools are in the
// OpenAI chat shape (format/chatmsg).
type wireObs struct {
	Messages []chatmsg.Message `json:"messages"`
	Tools    []trajectory.Tool `json:"tools"`
	Done     bool              `json:"done"`
	// Reward and Metrics are read by outcome, which names a value that
	// is not a number.
	Reward  json.RawMessage `json:"reward"`
	Metrics json.RawMessage `json:"metrics"`
}

// outcome reads a step response's reward and metrics, and the names of
// the metrics given as null. A reward left out or null is 0
// (docs/stdio-env.md); a metric must be a number, or true or false, which
// are 1 and 0 as OpenPipe ART averages its bool metrics. A null one
// (Python's None) is left out: read as 0 it would pull its mean down
// unseen, and every mean over a run's episodes (hone-inspect report,
// log-eval) reads a metric a row lacks as not reported; a formula reading
// it unguarded fails naming it. A string is refused naming the metric,
// which encoding/json's error ("Go struct field wireObs.metrics") did not.
func (r wireObs) outcome() (o env.Outcome, nulls []string, err error) {
	if len(r.Reward) > 0 && string(r.Reward) != "null" {
		if json.Unmarshal(r.Reward, &o.Reward) != nil {
			return o, nil, fmt.Errorf("reward is %s, not a number", clip(r.Reward))
		}
	}
	if len(r.Metrics) == 0 || string(r.Metrics) == "null" {
		return o, nulls, nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(r.Metrics, &raw) != nil {
		return o, nil, fmt.Errorf(`metrics is %s, not an object of numbers ({"correct": 1} or {"correct": true})`, clip(r.Metrics))
	}
	o.Metrics = make(map[string]float64, len(raw))
	for k, v := range raw {
		f, isNull, ok := trajectory.MetricValue(v)
		switch {
		case !ok:
			return o, nil, fmt.Errorf("metrics %q is %s, not a number or true/false", k, clip(v))
		case isNull:
			nulls = append(nulls, k)
			continue
		}
		o.Metrics[k] = f
	}
	return o, nulls, nil
}

// clip is a value's first 80 bytes as UTF-8, for an error that becomes a
// row's error string: a cut inside a character, or a string of the
// program's in Latin-1, would not be.
func clip(v json.RawMessage) string {
	if len(v) > 80 {
		return strings.ToValidUTF8(string(v[:80]), "") + "…"
	}
	return strings.ToValidUTF8(string(v), "\uFFFD")
}

func fromWire(ws []chatmsg.Message) ([]trajectory.Message, error) {
	out := make([]trajectory.Message, len(ws))
	for i, w := range ws {
		m, err := trajectory.FromChat(w)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = m
	}
	return out, nil
}

func (ep *episode) Reset(ctx context.Context) (env.Observation, error) {
	var r wireObs
	sc := ep.sc
	if len(sc.Payload) == 0 {
		sc.Payload = json.RawMessage("null")
	}
	if err := ep.p.call(ctx, map[string]any{"op": "reset", "scenario": sc, "seed": ep.seed}, &r); err != nil {
		return env.Observation{}, err
	}
	msgs, err := fromWire(r.Messages)
	if err != nil {
		return env.Observation{}, fmt.Errorf("stdio: reset: %w", err)
	}
	for i, tool := range r.Tools {
		// The flat shape {"type", "name", "parameters"} reads as a tool
		// without a name, which no model can call and no row can hold.
		if tool.Name == "" {
			return env.Observation{}, fmt.Errorf(`stdio: reset: tools[%d] has no function name (want {"type": "function", "function": {"name", "description", "parameters"}})`, i)
		}
	}
	return env.Observation{Messages: msgs, Tools: r.Tools}, nil
}

func (ep *episode) Step(ctx context.Context, t env.Turn) (env.Feedback, error) {
	ids := make([]string, 0, len(t.Calls))
	for _, c := range t.Calls {
		ids = append(ids, c.ID)
	}
	var r wireObs
	if err := ep.p.call(ctx, map[string]any{"op": "step", "message": t.Message.Chat(), "calls": ids}, &r); err != nil {
		return env.Feedback{}, err
	}
	msgs, err := fromWire(r.Messages)
	if err != nil {
		return env.Feedback{}, fmt.Errorf("stdio: step: %w", err)
	}
	o, nulls, err := r.outcome()
	if err != nil {
		return env.Feedback{}, fmt.Errorf("stdio: step: %w", err)
	}
	ep.outcome, ep.nulls = o, nulls
	return env.Feedback{Messages: msgs, Done: r.Done}, nil
}

// Outcome implements env.Episode. The nulls warned of are those of the
// outcome the row records, the last step's: a metric null on an earlier
// step (not decided yet) and a number on the last is left out of no row.
func (ep *episode) Outcome() env.Outcome {
	for _, k := range ep.nulls {
		ep.e.warnNull(k, ep.sc.ID)
	}
	return ep.outcome
}

func (ep *episode) Close() error { return ep.p.close() }

// Policies implements env.Scripted with the policies the program named.
func (e *Env) Policies() []string { return e.policies }

// Policy implements env.Scripted: a process of its own answers "act".
func (e *Env) Policy(name string, seed int64) (env.Policy, error) {
	found := false
	for _, p := range e.policies {
		found = found || p == name
	}
	if !found {
		return nil, fmt.Errorf("stdio: %w %q (have %v)", env.ErrUnknownPolicy, name, e.policies)
	}
	return &policy{e: e, name: name, seed: seed}, nil
}

// policy answers "act" from one process of its own, started at the first
// turn; Close ends it (the loop closes policies that are io.Closers).
type policy struct {
	e    *Env
	name string
	seed int64
	p    *proc
}

func (pl *policy) Act(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool) (trajectory.Message, error) {
	if pl.p == nil {
		p, err := pl.e.start(ctx)
		if err != nil {
			return trajectory.Message{}, err
		}
		pl.p = p
	}
	var r struct {
		Message chatmsg.Message `json:"message"`
	}
	// An episode without tools sends [], not null: the protocol shows a
	// list, and a program that iterates it crashed on null.
	if tools == nil {
		tools = []trajectory.Tool{}
	}
	req := map[string]any{"op": "act", "policy": pl.name, "seed": pl.seed, "messages": trajectory.ChatMessages(msgs), "tools": tools}
	if err := pl.p.call(ctx, req, &r); err != nil {
		return trajectory.Message{}, err
	}
	// A policy's turn is the assistant's whatever it says: a program that
	// leaves the role out (it answers one question) failed the episode
	// with "no role"; one that names another role is wrong and says so.
	switch r.Message.Role {
	case "":
		r.Message.Role = "assistant"
	case "assistant":
	default:
		return trajectory.Message{}, fmt.Errorf("stdio: act: the policy's message has role %q; a policy's turn is the assistant's", r.Message.Role)
	}
	return trajectory.FromChat(r.Message)
}

func (pl *policy) Close() error {
	if pl.p != nil {
		return pl.p.close()
	}
	return nil
}

// proc is one running environment process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan []byte
	// readErr, set before lines is closed, says why reading stopped when
	// the program did not (a line over MaxLineBytes).
	readErr error
	stderr  *procgroup.Tail
	group   *procgroup.Set // the command's programs, cmd among them until close
	done    chan struct{}
	sent    int // requests sent: the id of the last one

	// waiting says a request waits for its response: a line read while
	// none does is kept in extra and fails the next request, since every
	// response after it would answer the request before its own.
	mu      sync.Mutex
	waiting bool
	extra   []byte
	once    sync.Once
	err     error
}

func (e *Env) start(ctx context.Context) (*proc, error) {
	cmd := exec.Command(e.argv[0], e.argv[1:]...)
	cmd.Dir = e.dir
	// A program behind a wrapper (sh, uv run, npx) is the wrapper's child
	// and holds its stderr: once the wrapper is gone, Wait must not wait
	// for that child to close it.
	cmd.WaitDelay = time.Second
	procgroup.Own(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan []byte, 1), stderr: procgroup.NewTail(4096), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	// Tracked in the command's set, which kills it if the command exits
	// without closing it (a second Ctrl-C).
	p.group = procgroup.SetFrom(ctx)
	if err := p.group.Start(cmd, cmd.Start); err != nil {
		return nil, fmt.Errorf("stdio: start %v: %w", e.argv, err)
	}
	limit := e.MaxLineBytes
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	go func() {
		defer close(p.lines)
		br := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := readLine(br, limit)
			if errors.Is(err, errLineTooLong) {
				p.readErr = err
				return
			}
			if len(bytes.TrimSpace(line)) > 0 && p.expected(line) {
				select {
				case p.lines <- line:
				case <-p.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return p, nil
}

// expected says whether a request waits for line, and keeps the first
// line that none waited for.
func (p *proc) expected(line []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.waiting {
		if p.extra == nil {
			p.extra = line
		}
		return false
	}
	p.waiting = false
	return true
}

// errLineTooLong: the program wrote a line over its limit.
var errLineTooLong = errors.New("the environment wrote a line longer than the limit")

// readLine reads up to and including the next newline, as
// bufio.Reader.ReadBytes does, but fails with errLineTooLong once the line
// passes limit bytes.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			// Users cannot raise the limit (no --env-opt sets it): the
			// error says how large it is and what to send instead.
			return nil, fmt.Errorf("%w of %d bytes (%.3g MiB), hone-collect's cap on one response: shorten what it carries (a tool result or observation this long would not fit a model's context either), or write the data to a file and send its path",
				errLineTooLong, limit, float64(limit)/(1<<20))
		}
		line = append(line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// call sends one request and reads one response into out.
func (p *proc) call(ctx context.Context, req any, out any) error {
	// Each request carries its number: a program that echoes it in its
	// response ("id") lets a response out of step be caught for certain.
	p.sent++
	req.(map[string]any)["id"] = p.sent
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	op, _ := req.(map[string]any)["op"].(string)
	p.mu.Lock()
	extra := p.extra
	p.waiting = extra == nil
	p.mu.Unlock()
	if extra != nil {
		p.close()
		return fmt.Errorf("stdio: %s: responses out of step: the environment wrote a line that answered no request (a second response to the one before, or a print to stdout, where only responses go; logs go to stderr): %.200q", op, extra)
	}
	// A program that does not read (hung before its loop) blocks a
	// request larger than the pipe holds: the write waits on ctx too, and
	// closing the process ends it.
	written := make(chan error, 1)
	go func() {
		_, err := p.stdin.Write(append(b, '\n'))
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			// The program is gone (a broken pipe): said as when it exits
			// before its answer, with its exit status and all of its
			// stderr, which "write: broken pipe" left to be guessed.
			p.close()
			return fmt.Errorf("stdio: %s: the environment exited without answering (%s)%s", op, p.status(), p.stderr.Quote())
		}
	case <-ctx.Done():
		p.close()
		<-written
		return fmt.Errorf("stdio: %s: %w%s", op, ctx.Err(), p.stderr.Quote())
	}
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.close()
			if p.readErr != nil {
				return fmt.Errorf("stdio: %s: %w", op, p.readErr)
			}
			return fmt.Errorf("stdio: %s: the environment exited without answering (%s)%s", op, p.status(), p.stderr.Quote())
		}
		if !json.Valid(line) {
			return fmt.Errorf("stdio: %s: %w", op, notJSON(line))
		}
		var e struct {
			ID    json.RawMessage `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		// null, which decodes into anything as nothing, is no object
		// either: reset would read it as an empty observation.
		if t := bytes.TrimSpace(line); t[0] != '{' || json.Unmarshal(line, &e) != nil {
			return fmt.Errorf("stdio: %s: response is not a JSON object: %.200q", op, line)
		}
		// Only a number echoes the request's: an "id" of another type (a
		// scenario's name, a string) is the program's own, which programs
		// written before requests had ids may send, and was ignored then.
		if n, err := strconv.ParseFloat(string(e.ID), 64); err == nil && n != float64(p.sent) {
			p.close()
			return fmt.Errorf("stdio: %s: responses out of step: the response has id %.40s, the request %d (a second response to an earlier request?)", op, e.ID, p.sent)
		}
		if len(e.Error) > 0 && string(e.Error) != "null" {
			// The protocol's error is text; one given otherwise (an
			// object, as JSON-RPC writes it) is quoted as JSON rather
			// than hidden behind a type error.
			var text string
			if json.Unmarshal(e.Error, &text) != nil {
				// Compact keeps the bytes of its strings, UTF-8 or not;
				// the error becomes a row's error string, which must be.
				var b bytes.Buffer
				json.Compact(&b, e.Error)
				text = strings.ToValidUTF8(b.String(), "\uFFFD")
			}
			return fmt.Errorf("stdio: %s: environment error: %s", op, text)
		}
		if err := json.Unmarshal(line, out); err != nil {
			return fmt.Errorf("stdio: %s: response: %w", op, typeError(err))
		}
		return nil
	case <-ctx.Done():
		// Closed first, so that the stderr quoted, what the program was
		// busy with, is all it wrote.
		p.close()
		// Only the first request of a process can wait on a buffered
		// stdout: once a response came through the pipe, the program
		// flushes, and a later request that times out is slow, not
		// buffered.
		if p.sent == 1 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("stdio: %s: %w: no response came; %s%s", op, ctx.Err(), bufferedHint, p.stderr.Quote())
		}
		return fmt.Errorf("stdio: %s: %w%s", op, ctx.Err(), p.stderr.Quote())
	}
}

// notJSON says why line, which is not JSON, is not, quoting it where its
// parsing failed: a long response (a tool result) quoted from its start
// hid the NaN that Python's json.dumps writes at its end. It names the
// usual causes: NaN or Infinity inside the object, a byte-order mark, a
// print to stdout before the response (any line not starting as an
// object), a Python dict printed as such, and a response written over
// several lines.
func notJSON(line []byte) error {
	line = bytes.TrimRight(line, "\r\n")
	var v any
	err := json.Unmarshal(line, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("response is not JSON: %w: %.200q", err, line)
	}
	// Offset is past the byte that failed: the quote starts 100 bytes
	// before it.
	at := int(se.Offset) - 1
	from, to := max(at-100, 0), min(at+100, len(line))
	quote := fmt.Sprintf("%q", line[from:to])
	if from > 0 {
		quote = "…" + quote
	}
	if to < len(line) {
		quote += "…"
	}
	const printHint = "stdout carries responses only: a print before the response? Write logs to stderr"
	hint := ""
	start := len(line) - len(bytes.TrimLeft(line, " \t"))
	nanPath, nanWord, nan := jsonnan.Find(line, err)
	switch rest := line[min(max(at, 0), len(line)):]; {
	case bytes.HasPrefix(rest, []byte("\ufeff")):
		// Not a print: an encoder that starts its output with a BOM
		// (Python's utf-8-sig) wrote it before the first response.
		hint = " (the program wrote a UTF-8 byte-order mark, U+FEFF, before the response, as Python's utf-8-sig encoding (PYTHONIOENCODING=utf-8-sig) does: write plain UTF-8, without it)"
	case start < len(line) && line[start] == '{' && nan:
		// A value inside an object, where json.dumps puts them; a line
		// starting "NaN values …" is a print, and gets the print hint
		// below. The letters elsewhere (a bad escape "\NaN" in a string,
		// a NaN where a key goes) are no NaN value, and get none.
		must := "every number must be finite"
		if nanPath == "reward" || strings.HasPrefix(nanPath, "metrics[") {
			must = "a reward or metric must be a finite number"
		}
		hint = fmt.Sprintf(" (%s is %s: NaN and Infinity are not JSON, though Python's json.dumps writes them for float('nan') and float('inf'): %s)", nanPath, nanWord, must)
	case start < len(line) && line[start] == '{' && endsInside(line):
		// The line ends inside the object: its rest is on the lines after
		// it, as json.dumps(out, indent=2) writes "{" alone on the first.
		// Said before the print hint, which "{" (failing at its first
		// byte) would get, sending its author after a print not there.
		hint = " (the line ends inside the object: a response is one JSON object on one line; written over several lines, with json.dumps(out, indent=…) or JSON.stringify(out, null, 2)? Leave the indent out)"
	case at == start || start == len(line) || line[start] != '{':
		// Not JSON from its first byte, or not starting as an object,
		// which every response is ("[DEBUG] …", "1 episode …" fail on a
		// later byte): no response at all.
		hint = " (" + printHint + ")"
	case at == start+1+len(line[start+1:])-len(bytes.TrimLeft(line[start+1:], " \t")) && line[at] == '\'':
		// {' is how Python's print(d) or str(d) writes a dict; JSON's
		// keys are in double quotes. A broken JSON object fails later,
		// or on another byte, and gets no hint.
		hint = " (a Python dict written with print(d) or str(d), whose quotes are ': a response is json.dumps(d); or " + printHint + ")"
	}
	return fmt.Errorf("response is not JSON: %w at byte %d: %s%s", err, at, quote, hint)
}

// endsInside says whether line is a JSON value that its end cuts short,
// rather than one that fails on a byte of its own.
func endsInside(line []byte) bool {
	var v any
	return errors.Is(json.NewDecoder(bytes.NewReader(line)).Decode(&v), io.ErrUnexpectedEOF)
}

// typeError words encoding/json's error for a field of the wrong type in
// the protocol's terms: "Go struct field wireObs.done of type bool" named
// a type of hone-collect's, not what the field should be.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" || te.Type == nil {
		return err
	}
	want := te.Type.String()
	switch te.Type.Kind() {
	case reflect.Bool:
		want = "true or false"
	case reflect.String:
		want = "a string"
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64:
		want = "a number"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Struct, reflect.Map:
		want = "an object"
	}
	got := "a " + te.Value
	if te.Value == "array" || te.Value == "object" {
		got = "an " + te.Value
	}
	return fmt.Errorf("%q is %s, want %s", te.Field, got, want)
}

// bufferedHint names the usual cause of a program that never answers: its
// stdout is a pipe, which Python's print and C's stdio buffer until exit,
// so the response sits unwritten while hone-collect waits for it.
const bufferedHint = "a program that buffers its stdout (Python's print without flush=True, C's printf without fflush) answers only when it exits: flush after each response"

// close ends the process: stdin closed, then, once it exited or after
// 500 ms, its process group (on Unix) killed, so that what a wrapper
// started does not outlive it.
func (p *proc) close() error {
	p.once.Do(func() {
		close(p.done)
		p.stdin.Close()
		p.err = procgroup.Stop(p.cmd, 500*time.Millisecond)
		p.group.Forget(p.cmd)
	})
	return nil
}

// status says how the closed process ended, as os/exec words it: "exit
// status 0" for a clean exit, for which Wait gives no error.
func (p *proc) status() string {
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}
