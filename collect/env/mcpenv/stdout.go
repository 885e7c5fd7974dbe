package mcpenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdoutTail passes a stdio server's stdout to the session, keeping the
// start of the last lines read: when the session fails on a line that is
// not JSON (a print, a start-up banner), the error quotes that line, which
// the SDK's error ("invalid character 'C' looking for beginning of value")
// does not. Lines, not the last bytes, are kept: the SDK's decoder reads
// as far ahead as its buffer (grown by an earlier large message) allows,
// and a large message read with the print after it pushed the print out of
// a tail of bytes.
type stdoutTail struct {
	r     io.ReadCloser
	mu    sync.Mutex
	lines []lineHead // the last stdoutLinesMax lines ended, oldest first
	cur   lineHead   // the line being read, not yet ended
}

// lineHead is the first lineHeadMax bytes of a line; cut says it was
// longer.
type lineHead struct {
	b   []byte
	cut bool
}

// lineHeadMax is how much of a line is kept: more than the quote shows,
// and enough to read a short line whole as JSON. stdoutLinesMax is how
// many lines are kept: more than a read ahead holds after a print, short
// of a flood of messages.
const (
	lineHeadMax    = 1024
	stdoutLinesMax = 256
)

func newStdoutTail(r io.ReadCloser) *stdoutTail {
	return &stdoutTail{r: r}
}

func (s *stdoutTail) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		piece := b
		if i >= 0 {
			piece = b[:i]
		}
		room := lineHeadMax - len(s.cur.b)
		s.cur.b = append(s.cur.b, piece[:min(room, len(piece))]...)
		s.cur.cut = s.cur.cut || len(piece) > room
		if i < 0 {
			break
		}
		if len(s.lines) == stdoutLinesMax {
			s.lines = append(s.lines[:0], s.lines[1:]...)
		}
		s.lines, s.cur = append(s.lines, s.cur), lineHead{}
		b = b[i+1:]
	}
	return n, err
}

func (s *stdoutTail) Close() error { return s.r.Close() }

// notJSON is "; the server wrote … on stdout" with the first line kept
// that is no JSON-RPC message, when err is the session's failure to read
// one, or says the limit on one message when err is that a message was
// over it; "" otherwise. Nil-safe, as a URL's server has no stdout.
func (s *stdoutTail) notJSON(err error) string {
	if s != nil && overLimit(err) {
		return fmt.Sprintf("; the server's message (a tool result?) was over %d MiB, the MCP SDK's limit on one, which the session ends at", mcp.DefaultMaxLineLength>>20)
	}
	if s == nil || err == nil || !decodeFailure(err) {
		return ""
	}
	s.mu.Lock()
	lines := append(slices.Clone(s.lines), s.cur)
	s.mu.Unlock()
	// The lines before the one the session failed on were messages: the
	// first that is none is it. The last may be unended: a print written
	// in pieces, of which the session read the first and closed the pipe.
	for _, l := range lines {
		if b := bytes.TrimSpace(l.b); len(b) > 0 && !isRPCHead(b, l.cut) {
			return fmt.Sprintf("; the server wrote %.200q on stdout, which carries its MCP messages only (a print? write logs to stderr)", b)
		}
	}
	return ""
}

// decodeFailure says whether err is the session's failure to read a line
// of stdout as a JSON-RPC message: a line that is no JSON, or, in the
// SDK's words, one of JSON that is none (a print of json.dumps): an
// object without the version tag, any other value (1, "ready": the
// SDK's "unmarshaling jsonrpc message"), an empty array or null (its
// "empty batch"), or an object with the tag and neither a method nor an
// id (its "invalid request").
func decodeFailure(err error) bool {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return true
	}
	for _, words := range []string{"invalid character", "invalid message version tag", "unmarshaling jsonrpc message", "empty batch", "invalid request"} {
		if strings.Contains(err.Error(), words) {
			return true
		}
	}
	return false
}

// isRPCHead says whether line, the head of a line cut short when cut, is
// a JSON-RPC message's: a whole line is read (isRPC); a cut one, a large
// message, cannot be, and is taken for one when it starts as a JSON
// object ({" or [{"), which a print or Python's repr of a dict ({') does
// not.
func isRPCHead(line []byte, cut bool) bool {
	if !cut {
		return isRPC(line)
	}
	line = bytes.TrimLeft(bytes.TrimPrefix(line, []byte("[")), " \t")
	return bytes.HasPrefix(line, []byte("{")) && bytes.HasPrefix(bytes.TrimLeft(line[1:], " \t\r"), []byte(`"`))
}

// isRPC says whether line is a JSON-RPC 2.0 message, or a batch of them:
// the version tag and a method or an id, as the SDK reads one. The tag
// alone ({"jsonrpc":"2.0"}, a print of a status object) is none: the SDK
// fails on it with "invalid request", which says nothing of stdout.
func isRPC(line []byte) bool {
	var m struct {
		Version string          `json:"jsonrpc"`
		Method  json.RawMessage `json:"method"`
		ID      json.RawMessage `json:"id"`
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		return json.Unmarshal(line, &batch) == nil && len(batch) > 0 && isRPC(bytes.TrimSpace(batch[0]))
	}
	if json.Unmarshal(line, &m) != nil || m.Version != "2.0" {
		return false
	}
	return len(m.Method) > 0 || (len(m.ID) > 0 && string(m.ID) != "null")
}

// overLimit says whether err is the SDK's failure on a message over its
// limit on one (mcp.DefaultMaxLineLength), which ends the session though
// the server, which wrote it whole, works.
func overLimit(err error) bool {
	return err != nil && strings.Contains(err.Error(), "exceeded the configured maximum line length")
}
