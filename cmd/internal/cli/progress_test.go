package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestFormatProgress(t *testing.T) {
	tests := []struct {
		s    ProgressState
		want string
	}{
		{ProgressState{Label: "groups", Done: 12, Total: 100, Tokens: 1200, Elapsed: 3 * time.Second},
			"groups 12/100 (12%)  4.0/s  tokens 1.2k (400/s)  ETA 22s"},
		{ProgressState{Label: "groups", Done: 0, Total: 100},
			"groups 0/100 (0%)  ETA ?"},
		{ProgressState{Label: "rows", Done: 250000, Elapsed: 10 * time.Second},
			"rows 250000  25k/s"},
		{ProgressState{Label: "groups", Done: 100, Total: 100, Tokens: 3_500_000, Elapsed: 2 * time.Minute},
			"groups 100/100 (100%)  0.8/s  tokens 3.5M (29.2k/s)"},
		{ProgressState{Label: "groups", Done: 1, Total: 7200, Elapsed: time.Second},
			"groups 1/7200 (0%)  1.0/s  ETA 1h59m59s"},
		{ProgressState{Label: "groups", Done: 2, Total: 4, Elapsed: 4 * time.Second, Idle: 2500 * time.Millisecond},
			"groups 2/4 (50%)  0.5/s  ETA 4s  waiting 2s"},
		{ProgressState{Label: "groups", Done: 0, Total: 4, Elapsed: 1500 * time.Millisecond, Idle: 1500 * time.Millisecond},
			"groups 0/4 (0%)  0.0/s  ETA ?  waiting 1s"},
		{ProgressState{Label: "groups", Done: 2, Total: 4, Elapsed: 4 * time.Second, Idle: 999 * time.Millisecond},
			"groups 2/4 (50%)  0.5/s  ETA 4s"},
		{ProgressState{Label: "groups", Done: 4, Total: 4, Elapsed: 4 * time.Second, Idle: 3 * time.Second},
			"groups 4/4 (100%)  1.0/s"},
	}
	for _, tc := range tests {
		if got := FormatProgress(tc.s); got != tc.want {
			t.Errorf("FormatProgress(%+v)\n got %q\nwant %q", tc.s, got, tc.want)
		}
	}
}

func TestFormatSummary(t *testing.T) {
	s := ProgressState{Label: "groups", Done: 100, Total: 100, Tokens: 10000, Elapsed: 25 * time.Second}
	if got, want := FormatSummary(s), "done: 100 groups in 25s (4.0/s), 10k tokens (400/s)"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	s = ProgressState{Label: "rows", Done: 3, Elapsed: 1500 * time.Millisecond}
	if got, want := FormatSummary(s), "done: 3 rows in 1.5s (2.0/s)"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[float64]string{0: "0", 999: "999", 1000: "1k", 1250: "1.2k", 1e6: "1M", 2.5e9: "2.5G"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%v) = %q, want %q", n, got, want)
		}
	}
}

// Off a terminal the progress line is never drawn, however long the run;
// the counts and summary still work. The clock is synctest's: five
// intervals pass at once, and the elapsed time is exact.
func TestProgressNotTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		p := NewProgress(&buf, "groups", 10)
		p.interval = time.Millisecond
		p.Start(context.Background())
		for range 10 {
			p.Add(1, 5)
		}
		time.Sleep(5 * time.Millisecond)
		sum := p.Summary()
		if buf.Len() != 0 {
			t.Errorf("drew on a non-terminal: %q", buf.String())
		}
		if st := p.State(); st.Done != 10 || st.Tokens != 50 {
			t.Errorf("state %+v", st)
		}
		if want := "done: 10 groups in 5ms (2k/s), 50 tokens (10k/s)"; sum != want {
			t.Errorf("summary %q, want %q", sum, want)
		}
	})
}

// When live, Start redraws the line once per interval with the counts and
// rates of that moment, until Stop clears it. The clock is synctest's, so
// the lines drawn are exact.
func TestProgressLiveTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		p := NewProgress(&buf, "groups", 4)
		p.live = true // as if buf were a terminal
		p.interval = time.Second
		p.Start(context.Background())
		p.Add(1, 100)
		time.Sleep(1500 * time.Millisecond) // one redraw, at 1 s
		p.Add(1, 300)
		time.Sleep(time.Second) // one more, at 2 s
		synctest.Wait()
		p.Stop()
		// At 1 s nothing has finished for a second: the heartbeat shows.
		// At 2 s the last group finished 0.5 s ago: no heartbeat, and the
		// shorter line is padded over the longer one.
		line1 := "groups 1/4 (25%)  1.0/s  tokens 100 (100/s)  ETA 3s  waiting 1s"
		line2 := "groups 2/4 (50%)  1.0/s  tokens 400 (200/s)  ETA 2s"
		pad := strings.Repeat(" ", len(line1)-len(line2))
		want := "\r" + line1 + "\r" + line2 + pad + "\r" + strings.Repeat(" ", len(line2)) + "\r"
		if got := buf.String(); got != want {
			t.Errorf("drawn %q\nwant  %q", got, want)
		}
	})
}

// A total learnt after the start shows from then on.
func TestProgressSetTotal(t *testing.T) {
	p := NewProgress(&bytes.Buffer{}, "groups", 0)
	p.Add(1, 0)
	p.SetTotal(4)
	if st := p.State(); st.Done != 1 || st.Total != 4 {
		t.Fatalf("state %+v, want 1 of 4", st)
	}
}

// When live, the line is redrawn in place and cleared by Stop.
func TestProgressLiveDraw(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "groups", 4)
	p.live = true // as if buf were a terminal
	p.Add(2, 0)
	p.draw()
	p.Add(1, 0)
	p.draw()
	p.Stop()
	out := buf.String()
	if !bytes.HasPrefix(buf.Bytes(), []byte("\rgroups 2/4 (50%)")) || !bytes.Contains(buf.Bytes(), []byte("\rgroups 3/4 (75%)")) {
		t.Errorf("drawn %q", out)
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\r")) {
		t.Errorf("line not cleared at the end: %q", out)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, x := range map[string]any{"buffer": &bytes.Buffer{}, "file": f, "pipe": w, "nil": nil} {
		if IsTerminal(x) {
			t.Errorf("%s reported as a terminal", name)
		}
	}
	// The master side of a new pseudo-terminal is a terminal.
	pty := openPTY(t)
	if !IsTerminal(pty) {
		t.Error("/dev/ptmx not reported as a terminal")
	}
	if p := NewProgress(pty, "groups", 1); !p.live {
		t.Error("progress on a terminal is not live")
	}
}

// openPTY opens /dev/ptmx, a terminal for IsTerminal's purposes.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("open /dev/ptmx: %v", err)
		}
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
