package mcpenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdoutTail passes a stdio server's stdout to the session, keeping the
// last bytes read: when the session fails on a line that is not JSON (a
// print, a start-up banner), the error quotes that line, which the SDK's
// error ("invalid character 'C' looking for beginning of value") does
// not.
type stdoutTail struct {
	r  io.ReadCloser
	mu sync.Mutex
	b  []byte // the last stdoutTailMax bytes read
	// cut says bytes before b were dropped: its first line may be a
	// line's end only.
	cut bool
}

// stdoutTailMax is how much of the server's stdout is kept for the quote.
const stdoutTailMax = 8192

func newStdoutTail(r io.ReadCloser) *stdoutTail {
	return &stdoutTail{r: r}
}

func (s *stdoutTail) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p[:n]...)
	if len(s.b) > stdoutTailMax {
		s.b, s.cut = append([]byte(nil), s.b[len(s.b)-stdoutTailMax:]...), true
	}
	return n, err
}

func (s *stdoutTail) Close() error { return s.r.Close() }

// notJSON is "; the server wrote … on stdout" with the first line kept
// that is no JSON-RPC message, when err is the session's failure to read
// one, or says the limit on one message when err is that a message was
// over it; "" otherwise. Nil-safe, as a URL's server has no stdout.
func (s *stdoutTail) notJSON(err error) string {
	var se *json.SyntaxError
	// The SDK's words for a JSON line that is no JSON-RPC message (a
	// print of json.dumps) are its version tag's.
	if s != nil && overLimit(err) {
		return fmt.Sprintf("; the server's message (a tool result?) was over %d MiB, the MCP SDK's limit on one, which the session ends at", mcp.DefaultMaxLineLength>>20)
	}
	if s == nil || err == nil || (!errors.As(err, &se) && !strings.Contains(err.Error(), "invalid character") && !strings.Contains(err.Error(), "invalid message version tag")) {
		return ""
	}
	s.mu.Lock()
	lines := bytes.Split(s.b, []byte("\n"))
	cut := s.cut
	s.mu.Unlock()
	if cut && len(lines) > 1 {
		lines = lines[1:] // the first is a line's end only
	}
	for _, l := range lines {
		// The last line may be cut short: a print written in pieces, of
		// which the session read the first and closed the pipe.
		if l = bytes.TrimSpace(l); len(l) > 0 && !isRPC(l) {
			return fmt.Sprintf("; the server wrote %.200q on stdout, which carries its MCP messages only (a print? write logs to stderr)", l)
		}
	}
	return ""
}

// isRPC says whether line is a JSON-RPC 2.0 message, or a batch of them.
func isRPC(line []byte) bool {
	var m struct {
		Version string `json:"jsonrpc"`
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		return json.Unmarshal(line, &batch) == nil && len(batch) > 0 && isRPC(bytes.TrimSpace(batch[0]))
	}
	return json.Unmarshal(line, &m) == nil && m.Version == "2.0"
}

// overLimit says whether err is the SDK's failure on a message over its
// limit on one (mcp.DefaultMaxLineLength), which ends the session though
// the server, which wrote it whole, works.
func overLimit(err error) bool {
	return err != nil && strings.Contains(err.Error(), "exceeded the configured maximum line length")
}
