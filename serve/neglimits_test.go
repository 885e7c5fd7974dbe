package serve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels/ref"
)

// negativeLimits are Options each with one limit negative, by field name.
func negativeLimits() []struct {
	field string
	o     Options
} {
	return []struct {
		field string
		o     Options
	}{
		{"MaxBatch", Options{MaxBatch: -1}},
		{"MaxQueue", Options{MaxQueue: -1}},
		{"PrefillTokens", Options{PrefillTokens: -1}},
		{"MaxAdapters", Options{MaxAdapters: -1}},
		{"MaxTokens", Options{MaxTokens: -1}},
		{"MaxBodyBytes", Options{MaxBodyBytes: -1}},
		{"RequestTimeout", Options{RequestTimeout: -time.Minute}},
		{"DrainTimeout", Options{DrainTimeout: -time.Second}},
		{"PollInterval", Options{PollInterval: -time.Second}},
	}
}

// TestNegativeLimitsRefused: NewServer refuses a negative limit, naming
// the field, as hone-serve refuses the flag's negative value and as it
// refuses a negative KVCacheBytes. WithDefaults put the flag's default in
// its place, without a word: a library caller's MaxBatch -1 decoded 32
// sequences together, its MaxTokens -1 allowed 4096.
func TestNegativeLimitsRefused(t *testing.T) {
	for _, c := range negativeLimits() {
		c.o.Model, c.o.Backend = tinyDir(t), ref.New()
		s, err := NewServer(c.o)
		if err == nil {
			s.Engine().Shutdown(t.Context())
			t.Errorf("NewServer took a negative %s (served with the default in its place), want an error", c.field)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewServer with a negative %s: %q does not name it", c.field, err)
		}
	}
}

// TestNegativeLimitsRefusedUpstream: Run in front of vLLM refuses the
// negative limits it reads (MaxAdapters, MaxBodyBytes, PollInterval,
// DrainTimeout) as bad input naming the field, before it listens; it
// served with the default in their place.
func TestNegativeLimitsRefusedUpstream(t *testing.T) {
	for _, c := range negativeLimits() {
		switch c.field {
		case "MaxAdapters", "MaxBodyBytes", "PollInterval", "DrainTimeout":
		default:
			continue // the engine's, which the front does not read
		}
		ctx, cancel := context.WithCancel(context.Background())
		listened := false
		c.o.Upstream, c.o.Host = "http://127.0.0.1:1", "127.0.0.1"
		c.o.Ready = func(string) { listened = true; cancel() } // a server that starts stops at once
		err := Run(ctx, c.o)
		cancel()
		if listened || !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("Run with --upstream and a negative %s: %v (listened: %v), want bad input naming it, before listening", c.field, err, listened)
		}
	}
}
