package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the progress goroutine
// writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// screen plays out on a blank terminal what was written to it: "\r" moves
// to the start of the line, "\n" to the next line, other bytes overwrite.
// It returns the rows, trailing blanks trimmed.
func screen(out string) []string {
	rows := [][]byte{nil}
	col := 0
	for i := 0; i < len(out); i++ {
		r := len(rows) - 1
		switch c := out[i]; c {
		case '\r':
			col = 0
		case '\n':
			rows = append(rows, nil)
			col = 0
		default:
			for len(rows[r]) <= col {
				rows[r] = append(rows[r], ' ')
			}
			rows[r][col] = c
			col++
		}
	}
	s := make([]string, len(rows))
	for i, r := range rows {
		s[i] = strings.TrimRight(string(r), " ")
	}
	return s
}

// lastLine is the progress line as last drawn: the text after the last "\r"
// that is followed by something.
func lastLine(out string) string {
	sc := screen(out)
	return sc[len(sc)-1]
}

// The live line shows the percentage and an ETA from the rate so far, and a
// heartbeat once nothing has finished for a second, on fake time.
func TestProgressHeartbeatAndETA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		p := NewProgress(&buf, "groups", 10)
		p.live = true // as if buf were a terminal
		p.Start(context.Background())
		defer p.Stop()
		for range 4 {
			time.Sleep(time.Second)
			p.Add(1, 0)
		}
		time.Sleep(300 * time.Millisecond) // one redraw after the last Add
		synctest.Wait()
		if got, want := lastLine(buf.String()), "groups 4/10 (40%)  1.0/s  ETA 6s"; !strings.HasPrefix(got, want) || strings.Contains(got, "waiting") {
			t.Errorf("after 4 groups in 4.2s (the last redraw) the line is %q, want %q and no heartbeat", got, want)
		}
		time.Sleep(2 * time.Second) // nothing finishes
		synctest.Wait()
		if got := lastLine(buf.String()); !strings.HasSuffix(got, "  waiting 2s") {
			t.Errorf("2.3s with nothing done: line %q, want a heartbeat \"waiting 2s\"", got)
		}
		p.Add(1, 0)
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		if got := lastLine(buf.String()); strings.Contains(got, "waiting") || !strings.HasPrefix(got, "groups 5/10 (50%)") {
			t.Errorf("just after a group finished: line %q, want 5/10 and no heartbeat", got)
		}
		p.Stop()
		if got := lastLine(buf.String()); got != "" {
			t.Errorf("Stop left %q on the line", got)
		}
	})
}

// Before the first item the heartbeat counts from the start.
func TestProgressHeartbeatBeforeFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		p := NewProgress(&buf, "groups", 0)
		p.live = true
		p.Start(context.Background())
		time.Sleep(3100 * time.Millisecond)
		synctest.Wait()
		if got := lastLine(buf.String()); got != "groups 0  0.0/s  waiting 3s" {
			t.Errorf("line %q", got)
		}
		p.Stop()
	})
}

// Log lines written through Writer while the line is live scroll above it
// whole: the terminal ends with every log line intact, one per row, and the
// progress line alone on the last row.
func TestProgressWriterKeepsLogLinesWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		p := NewProgress(&buf, "groups", 3)
		p.live = true
		p.Start(context.Background())
		log := slog.New(slog.NewTextHandler(p.Writer(), &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
		time.Sleep(250 * time.Millisecond) // the line is drawn
		synctest.Wait()
		log.Info("retrying", "n", 1)
		p.Add(1, 0)
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		log.Warn("x")
		sc := screen(buf.String())
		want := []string{`level=INFO msg=retrying n=1`, `level=WARN msg=x`}
		if len(sc) != 3 || sc[0] != want[0] || sc[1] != want[1] || !strings.HasPrefix(sc[2], "groups 1/3 (33%)") {
			t.Errorf("terminal shows\n%s\nwant the two log lines whole, then the progress line", strings.Join(sc, "\n"))
		}
		p.Stop()
		log.Info("after")
		sc = screen(buf.String())
		if sc[2] != "level=INFO msg=after" || sc[3] != "" {
			t.Errorf("after Stop the log goes straight through: %q", sc)
		}
	})
}

// Off a terminal Writer passes writes through untouched.
func TestProgressWriterNotTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "groups", 3)
	p.Start(context.Background())
	defer p.Stop()
	p.Writer().Write([]byte("a line\n"))
	if buf.String() != "a line\n" {
		t.Errorf("wrote %q", buf.String())
	}
}
