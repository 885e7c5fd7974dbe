package mcpenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/procgroup"
)

// maxRestarts is how many times in a row the server is started again
// (or the URL connected again) after it was lost with no tool call
// answered since the previous restart: a server that dies at every call,
// or no longer starts, then fails the run's later episodes at once
// rather than being restarted for each of them.
const maxRestarts = 3

// server is one connection to the MCP server: a started program's
// session, or a URL's.
type server struct {
	session  *mcp.ClientSession
	cmd      *exec.Cmd // the stdio server's process; nil for a URL
	group    *procgroup.Set
	tail     *stderrTail // the stdio server's stderr; nil for a URL
	out      *stdoutTail // the stdio server's stdout; nil for a URL
	answered atomic.Bool // a tool call got an answer: the server works
	// tools are what this server listed: a restarted one is listed again,
	// since its program may have changed meanwhile, and its episodes are
	// offered what it serves.
	tools []trajectory.Tool

	lostOnce sync.Once
	done     chan struct{} // closed once the session is lost
}

// lose marks the session lost, so the next episode gets a new server.
func (s *server) lose() { s.lostOnce.Do(func() { close(s.done) }) }

func (s *server) lost() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// pingTimeout bounds the ping that tells a lost session from a call that
// failed on its own.
const pingTimeout = 5 * time.Second

// gone says whether the session is lost, after a call failed without
// the server's error answer: one that ended, or does not answer a ping,
// is marked lost; one that does (a result the SDK could not read) is kept,
// so that one bad answer does not restart the server under the other
// episodes using it.
func (s *server) gone(ctx context.Context) bool {
	if s.lost() {
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := s.session.Ping(pctx, nil); err != nil && ctx.Err() == nil {
		s.lose()
		return true
	}
	return s.lost()
}

// dial starts the server (Command) or connects to it (URL).
func dial(ctx context.Context, o Options, group *procgroup.Set) (*server, error) {
	s := &server{group: group, done: make(chan struct{})}
	var t mcp.Transport
	if len(o.Command) > 0 {
		// The server starts in a process group of its own, stopped whole
		// (procgroup.Stop): one started through a wrapper (npx, uv run,
		// sh -c) would otherwise outlive the run if it ignored its closed
		// stdin. Starting it here rather than through the SDK's
		// CommandTransport lets the group be killed before the server is
		// reaped, while its pid, the group's id, is no one else's.
		cmd := exec.Command(o.Command[0], o.Command[1:]...)
		procgroup.Own(cmd)
		var err error
		if s.tail, err = captureStderr(cmd); err != nil {
			return nil, err
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			s.tail.started()
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			s.tail.started()
			return nil, err
		}
		err = group.Start(cmd, cmd.Start)
		s.tail.started()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w%s", o.Command[0], err, s.tail.quote())
		}
		s.cmd = cmd
		s.out = newStdoutTail(stdout)
		t = &mcp.IOTransport{Reader: s.out, Writer: stdin}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: o.URL, DisableStandaloneSSE: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "hone-collect", Version: "1"}, nil)
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		if c, ok := t.(*mcp.IOTransport); ok {
			c.Writer.Close() // what Close would do for a session
		}
		serr := s.stop()
		return nil, fmt.Errorf("connect: %w%s%s", errors.Join(err, serr), s.out.notJSON(err), s.tail.quote())
	}
	s.session = session
	go func() {
		// A stdio server that exits ends the session at once; a URL's is
		// found lost only when a call fails (Step).
		session.Wait()
		s.lose()
	}()
	return s, nil
}

// close ends the session, then stops a stdio server with all it started.
func (s *server) close() error {
	s.lose()
	var err error
	if s.session != nil {
		err = s.session.Close()
	}
	return errors.Join(err, s.stop())
}

// stop gives a stdio server, its stdin closed, a second to exit, then
// kills what is left of its process group.
func (s *server) stop() error {
	if s.cmd == nil {
		return nil
	}
	err := procgroup.Stop(s.cmd, time.Second)
	s.group.Forget(s.cmd)
	var exit *exec.ExitError
	if errors.As(err, &exit) || errors.Is(err, io.EOF) {
		// Killed or exited with a status, as stopping makes it: not a
		// failure of the run.
		return nil
	}
	return err
}

// current returns the server for a new episode: the one connected, or,
// once that was lost, a new one, up to maxRestarts in a row without an
// answered call; after that it keeps failing with the reason it gave up.
func (e *Env) current(ctx context.Context) (*server, error) {
	e.srvMu.Lock()
	defer e.srvMu.Unlock()
	switch {
	case e.closed:
		return nil, errors.New("mcp: the environment is closed")
	case e.gaveUp != nil:
		return nil, e.gaveUp
	case e.srv != nil && !e.srv.lost():
		return e.srv, nil
	}
	why := e.lastErr
	if old := e.srv; old != nil {
		// Stopping now, not when the episode that lost it ends, so the
		// stderr quoted is whole.
		old.close()
		// A session ended by a message over the SDK's limit (a tool
		// result that large) failed that call's episode, but the
		// server answered it: the restart it needs is not one towards
		// giving up on the server. Asked of the closed session, whose
		// end says so whichever episode found it lost first.
		if old.answered.Load() || overLimit(old.session.Wait()) {
			e.restarts = 0
		}
		why = fmt.Errorf("the server was lost%s", old.tail.quote())
		e.srv = nil
	}
	if e.restarts >= maxRestarts {
		e.gaveUp = fmt.Errorf("mcp: gave up on the server after %d restarts in a row without a tool call answered: %w", e.restarts, why)
		return nil, e.gaveUp
	}
	e.restarts++
	s, err := e.restart(ctx)
	if err != nil {
		err = fmt.Errorf("mcp: restart %d of %d: %w", e.restarts, maxRestarts, err)
		if ctx.Err() != nil {
			// The episode's time ran out, not the server's chance.
			e.restarts--
		}
		e.lastErr = err
		return nil, err
	}
	e.logTools(e.tools, s.tools)
	e.srv, e.tools = s, s.tools
	return s, nil
}

// restart starts the server again (or connects the URL again) and lists
// its tools, within the start timeout as at the start of the run: a
// server that no longer answers its initialize would otherwise hold the
// episode that asked for it, and every other waiting for a server, for
// the episode's whole time, or for ever with no --episode-timeout.
func (e *Env) restart(ctx context.Context) (*server, error) {
	sctx := ctx
	if e.startTimeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, e.startTimeout)
		defer cancel()
	}
	s, err := dial(sctx, e.opts, e.group)
	if err == nil {
		if s.tools, err = listTools(sctx, s); err != nil {
			s.close()
		}
	}
	if err != nil && ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (no answer within the start timeout %v, --start-timeout)", err, e.startTimeout)
	}
	return s, err
}

// logTools says, when the restarted server's tools (now) are not those of
// the one before (was), which were added, removed or changed: the
// episodes from then on are offered others, which a reader of the run's
// rows would not know otherwise.
func (e *Env) logTools(was, now []trajectory.Tool) {
	if e.log == nil {
		return
	}
	before := make(map[string]trajectory.Tool, len(was))
	for _, t := range was {
		before[t.Name] = t
	}
	var added, removed, changed []string
	for _, t := range now {
		old, ok := before[t.Name]
		switch {
		case !ok:
			added = append(added, t.Name)
		case old != t:
			changed = append(changed, t.Name)
		}
		delete(before, t.Name)
	}
	for _, t := range was {
		if _, ok := before[t.Name]; ok {
			removed = append(removed, t.Name)
		}
	}
	if len(added)+len(removed)+len(changed) == 0 {
		e.log.Info("restarted the MCP server", "restart", e.restarts, "tools", len(now))
		return
	}
	e.log.Warn("the restarted MCP server offers other tools: later episodes are offered those", "restart", e.restarts,
		"added", added, "removed", removed, "changed", changed)
}
