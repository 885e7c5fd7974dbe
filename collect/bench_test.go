package collect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/collect/openaitest"
)

// BenchmarkCollect measures episodes/s and the collect overhead per model
// call against a trivial upstream (the fake answers at once), at several
// concurrencies: guess-the-number, 1..32 in 5 turns, bisecting replies.
//
//	go test -run '^$' -bench Collect ./collect/
func BenchmarkCollect(b *testing.B) {
	srv := openaitest.New(bisectReply)
	defer srv.Close()
	for _, conc := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			var buf bytes.Buffer
			episodes, calls := 0, int64(0)
			start := time.Now()
			before := srv.Count()
			for b.Loop() {
				buf.Reset()
				o := collect.Options{Env: "guess", Groups: 32, GroupSize: 8, Concurrency: conc, MaxTurns: 10, Seed: 1, Policy: "model", Out: &buf,
					Model: collect.ModelOptions{BaseURL: srv.BaseURL(), Model: "m", Retries: 1, Backoff: time.Millisecond}}
				st, err := runStats(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				episodes += st.Episodes
			}
			calls = srv.Count() - before
			el := time.Since(start)
			b.ReportMetric(float64(episodes)/el.Seconds(), "episodes/s")
			b.ReportMetric(float64(el.Microseconds())/float64(calls), "µs/call") // wall time per call, fake upstream included
			_ = io.Discard
		})
	}
}
