package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// countWarnings is a slog handler that counts the records at Warn.
type countWarnings struct{ n *atomic.Int64 }

func (h countWarnings) Enabled(context.Context, slog.Level) bool { return true }
func (h countWarnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}
func (h countWarnings) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countWarnings) WithGroup(string) slog.Handler      { return h }

// TestIgnoredFieldsBounded: the fields a request carries that this server
// does not read are named in X-Hone-Warning up to a few, each clipped, with
// their count, and logged once per name for a bounded number of names. The
// header listed them all: 3,001 unknown fields (a 90 kB body) gave a header
// line of 70 kB, past Python http.client's limit of 65,536 bytes on one
// (requests fails with LineTooLong), and every new name was logged and
// remembered for the server's life, so a client sending fresh names grew
// the log and the memory without bound.
func TestIgnoredFieldsBounded(t *testing.T) {
	var warns atomic.Int64
	ts := startServer(t, Options{Model: tinyDir(t), Log: slog.New(countWarnings{&warns})}, nil)
	for round := range 2 {
		var extra strings.Builder
		for i := range 3000 {
			fmt.Fprintf(&extra, `,"unknown_field_%d_%05d":1`, round, i)
		}
		fmt.Fprintf(&extra, `,"%s":1`, strings.Repeat("x", 1000))
		status, h, body := ts.postHeader(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":1`+extra.String()+`}`)
		warning := h.Get(WarningHeader)
		if status != http.StatusOK || !strings.HasPrefix(warning, "fields ignored: unknown_field_") || !strings.Contains(warning, "3001 in all") || len(warning) > 1024 {
			t.Fatalf("3,001 unknown fields: %d, %s of %d bytes %.200q…; want 200 and at most 1 kB saying 3001 in all: %.200s", status, WarningHeader, len(warning), warning, body)
		}
	}
	if n := warns.Load(); n > 100 {
		t.Fatalf("%d warnings logged for 6,002 unknown field names; want them bounded", n)
	}
	// A few are named in full, as before.
	_, h, _ := ts.postHeader(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":1,"spaces_between_special_tokens":false}`)
	if got := h.Get(WarningHeader); got != "fields ignored: spaces_between_special_tokens" {
		t.Fatalf("%s %q, want %q", WarningHeader, got, "fields ignored: spaces_between_special_tokens")
	}
}
