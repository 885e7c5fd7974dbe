package collect_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestAbsurdSizesRefused: a --group-size or a --groups of generated
// scenarios past what one run can hold in memory is bad usage, named
// with its limit, before anything is allocated. -G 1099511627776 panicked
// in makeslice as the first episode finished, and --groups 100000000 of
// a built-in environment ran out of memory generating the scenarios.
func TestAbsurdSizesRefused(t *testing.T) {
	for _, c := range []struct {
		name       string
		groups, gs int
		flag       string
	}{
		{"group-size", 1, 1099511627776, "--group-size 1099511627776"},
		{"groups", 100000000, 1, "--groups 100000000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			o := collect.Options{Env: "guess", Groups: c.groups, GroupSize: c.gs, Concurrency: 1, Policy: "scripted", Out: &out}
			err := collect.Run(context.Background(), o)
			if !errors.Is(err, stageerr.ErrUsage) || !strings.Contains(err.Error(), c.flag) || !strings.Contains(err.Error(), "at most") {
				t.Fatalf("got %v, want a usage error naming %s and its limit", err, c.flag)
			}
		})
	}
}
