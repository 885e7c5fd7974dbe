package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ProgressState is a snapshot of a long run: items (groups, rows) done out
// of Total (0 when unknown) and tokens processed, after Elapsed; Idle is
// how long ago the last item finished (or the run started, before the
// first).
type ProgressState struct {
	Label   string // what is counted, e.g. "groups"
	Done    int64
	Total   int64
	Tokens  int64
	Elapsed time.Duration
	Idle    time.Duration
}

// heartbeatAfter is how long the line waits with nothing finished before
// it says so: a slow first group or a stalled server shows as a ticking
// "waiting" rather than a frozen line.
const heartbeatAfter = time.Second

// FormatProgress renders the live progress line, e.g.
//
//	groups 12/100 (12%)  4.0/s  tokens 1.2k (400/s)  ETA 22s
//	groups 12/100 (12%)  4.0/s  tokens 1.2k (400/s)  ETA 22s  waiting 3s
//
// The tokens part is left out while Tokens is 0, and the percentage and ETA
// while Total is unknown. The heartbeat ("waiting 3s") shows once nothing
// has finished for a second.
func FormatProgress(s ProgressState) string {
	var b strings.Builder
	secs := s.Elapsed.Seconds()
	fmt.Fprintf(&b, "%s %d", s.Label, s.Done)
	if s.Total > 0 {
		fmt.Fprintf(&b, "/%d (%d%%)", s.Total, s.Done*100/s.Total)
	}
	if secs > 0 {
		fmt.Fprintf(&b, "  %s/s", formatRate(float64(s.Done)/secs))
	}
	if s.Tokens > 0 {
		fmt.Fprintf(&b, "  tokens %s", formatCount(float64(s.Tokens)))
		if secs > 0 {
			fmt.Fprintf(&b, " (%s/s)", formatRate(float64(s.Tokens)/secs))
		}
	}
	if s.Total > 0 && s.Done < s.Total {
		if s.Done > 0 && secs > 0 {
			eta := time.Duration(float64(s.Total-s.Done) / (float64(s.Done) / secs) * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %s", eta.Round(time.Second))
		} else {
			b.WriteString("  ETA ?")
		}
	}
	if s.Idle >= heartbeatAfter && (s.Total == 0 || s.Done < s.Total) {
		fmt.Fprintf(&b, "  waiting %s", s.Idle.Truncate(time.Second))
	}
	return b.String()
}

// FormatSummary renders the one-line summary printed at the end, e.g.
//
//	done: 100 groups in 25s (4.0/s), 10k tokens (400/s)
func FormatSummary(s ProgressState) string {
	var b strings.Builder
	secs := s.Elapsed.Seconds()
	fmt.Fprintf(&b, "done: %d %s in %s", s.Done, s.Label, s.Elapsed.Round(time.Millisecond))
	if secs > 0 {
		fmt.Fprintf(&b, " (%s/s)", formatRate(float64(s.Done)/secs))
	}
	if s.Tokens > 0 {
		fmt.Fprintf(&b, ", %s tokens", formatCount(float64(s.Tokens)))
		if secs > 0 {
			fmt.Fprintf(&b, " (%s/s)", formatRate(float64(s.Tokens)/secs))
		}
	}
	return b.String()
}

// formatCount writes n with a k/M/G suffix and up to one decimal.
func formatCount(n float64) string {
	switch {
	case n >= 1e9:
		return trimZero(fmt.Sprintf("%.1f", n/1e9)) + "G"
	case n >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", n/1e6)) + "M"
	case n >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", n/1e3)) + "k"
	default:
		return fmt.Sprintf("%.0f", n)
	}
}

// formatRate keeps one decimal for small rates, where it matters.
func formatRate(r float64) string {
	if r < 10 {
		return fmt.Sprintf("%.1f", r)
	}
	return formatCount(r)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// Progress counts work and, when its writer is a terminal, redraws one
// progress line on it a few times a second. It is safe for concurrent Add.
// Whatever else goes to the same terminal (log lines) must go through
// Writer, so that it is never written over the line.
type Progress struct {
	w        io.Writer
	live     bool
	label    string
	total    atomic.Int64
	interval time.Duration
	start    time.Time
	done     atomic.Int64
	tokens   atomic.Int64
	lastItem atomic.Int64 // when an item last finished, in ns since start

	mu      sync.Mutex // guards writing to w, lastLen and stop
	lastLen int
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewProgress counts label (e.g. "groups") out of total (0 if unknown).
// The line is drawn on w only if w is a terminal (IsTerminal).
func NewProgress(w io.Writer, label string, total int64) *Progress {
	p := &Progress{w: w, live: IsTerminal(w), label: label, interval: 200 * time.Millisecond, start: time.Now()}
	p.total.Store(total)
	return p
}

// SetTotal sets the number of items expected, for a run that learns it
// after it started (0: unknown).
func (p *Progress) SetTotal(total int64) { p.total.Store(total) }

// Add records items finished and tokens processed.
func (p *Progress) Add(items, tokens int64) {
	if items > 0 {
		p.lastItem.Store(int64(time.Since(p.start)))
	}
	p.done.Add(items)
	p.tokens.Add(tokens)
}

// State returns the current counts.
func (p *Progress) State() ProgressState {
	el := time.Since(p.start)
	return ProgressState{Label: p.label, Done: p.done.Load(), Total: p.total.Load(), Tokens: p.tokens.Load(),
		Elapsed: el, Idle: el - time.Duration(p.lastItem.Load())}
}

// Writer returns a writer to the progress line's own w for the other
// output of the run (give it to the logger): while the line is drawn, each
// write clears it, writes below it and draws it again, so that log lines
// scroll above the line and are never written over. Off a terminal it
// writes straight through. A slog handler writes one record per Write.
func (p *Progress) Writer() io.Writer { return progressWriter{p} }

type progressWriter struct{ p *Progress }

func (pw progressWriter) Write(b []byte) (int, error) {
	p := pw.p
	p.mu.Lock()
	defer p.mu.Unlock()
	redraw := p.lastLen > 0
	p.clearLocked()
	n, err := p.w.Write(b)
	if redraw && p.stop != nil {
		p.drawLocked()
	}
	return n, err
}

// Start begins redrawing until ctx is done or Stop is called. It does
// nothing when the writer is not a terminal.
func (p *Progress) Start(ctx context.Context) {
	if !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		return
	}
	p.stop = make(chan struct{})
	stop := p.stop
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.draw()
			case <-ctx.Done():
				return
			case <-stop:
				return
			}
		}
	}()
}

func (p *Progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawLocked()
}

// drawLocked redraws the line in place, padding over a longer previous one.
func (p *Progress) drawLocked() {
	line := FormatProgress(p.State())
	pad := ""
	if n := p.lastLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.lastLen = len(line)
}

// clearLocked blanks a drawn line and puts the cursor at its start.
func (p *Progress) clearLocked() {
	if p.lastLen > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastLen))
		p.lastLen = 0
	}
}

// Stop ends the redrawing and clears the progress line, so the summary or
// an error message starts on a clean line.
func (p *Progress) Stop() {
	p.mu.Lock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

// Summary stops the progress line and returns FormatSummary of the final
// counts, for the caller to print or log.
func (p *Progress) Summary() string {
	p.Stop()
	return FormatSummary(p.State())
}
