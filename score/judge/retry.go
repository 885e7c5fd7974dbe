package judge

import (
	"context"
	"errors"
	"time"

	"github.com/hone-rl/hone/internal/retry"
)

// Retry is a decorator that repeats a failed call while the failure is
// retryable (a malformed answer, HTTP 429/5xx but for the codes
// retry.Answer names final, a per-call timeout) and fewer than Attempts
// calls were made, pausing before each retry the longer of Backoff's pause
// and the wait the failed call's server asked for (Error.RetryAfter). The repeating is internal/retry's, the one retry
// decorator collect's model calls use too; Retry adds the accounting: the
// verdict's usage, or the final error's, includes every attempt.
type Retry struct {
	Next     Judge
	Attempts int // total calls at most; values below 1 mean 1
	// Backoff returns the pause before retry number i (1-based); nil means
	// no pause. retry.Exponential makes the usual one.
	Backoff func(i int) time.Duration
}

// Judge calls Next until it succeeds, fails for good, or runs out of
// attempts.
func (r Retry) Judge(ctx context.Context, req Request) (Verdict, error) {
	var spent Usage // of the failed attempts
	calls := 0
	var asked time.Duration // the wait the last failure's server asked for
	pause := func(i int) time.Duration {
		var d time.Duration
		if r.Backoff != nil {
			d = r.Backoff(i)
		}
		return max(d, asked)
	}
	p := retry.Policy{Attempts: r.Attempts, Retryable: retryable, Backoff: pause}
	v, err := retry.Do(ctx, p, func(ctx context.Context) (Verdict, error) {
		calls++
		v, err := r.Next.Judge(ctx, req)
		asked = 0
		if err != nil {
			spent = spent.Add(usageOf(err))
			var je *Error
			if errors.As(err, &je) {
				asked = je.RetryAfter
			}
		}
		return v, err
	})
	spent.Retries += int64(calls - 1) // every call after the first repeats a failed one
	if err == nil {
		v.Usage = v.Usage.Add(spent)
		return v, nil
	}
	if je, ok := err.(*Error); ok {
		cp := *je
		cp.Usage = spent
		return Verdict{}, &cp
	}
	return Verdict{}, withUsage(err, spent)
}
