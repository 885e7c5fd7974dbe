package judge

import (
	"context"
	"time"
)

// Retry is a decorator that repeats a failed call while the failure is
// retryable (a malformed answer, HTTP 429/5xx, a per-call timeout) and
// fewer than Attempts calls were made. The verdict's usage, or the final
// error's, includes every attempt.
type Retry struct {
	Next     Judge
	Attempts int // total calls at most; values below 1 mean 1
	// Backoff returns the pause before retry number i (1-based); nil means
	// no pause.
	Backoff func(i int) time.Duration
}

// Judge calls Next until it succeeds, fails for good, or runs out of
// attempts.
func (r Retry) Judge(ctx context.Context, req Request) (Verdict, error) {
	var spent Usage
	for i := 0; ; i++ {
		v, err := r.Next.Judge(ctx, req)
		if err == nil {
			v.Usage = v.Usage.Add(spent)
			return v, nil
		}
		spent = spent.Add(usageOf(err))
		if !retryable(err) || i+1 >= r.Attempts || ctx.Err() != nil {
			if je, ok := err.(*Error); ok {
				cp := *je
				cp.Usage = spent
				return Verdict{}, &cp
			}
			return Verdict{}, err
		}
		spent.Retries++
		if r.Backoff != nil {
			t := time.NewTimer(r.Backoff(i + 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return Verdict{}, ctx.Err()
			case <-t.C:
			}
		}
	}
}

// ExponentialBackoff returns base, 2·base, 4·base, ... capped at max.
func ExponentialBackoff(base, max time.Duration) func(int) time.Duration {
	return func(i int) time.Duration {
		d := base
		for ; i > 1 && d < max; i-- {
			d *= 2
		}
		return min(d, max)
	}
}
