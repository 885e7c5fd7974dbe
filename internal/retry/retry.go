package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy says how often and how patiently a failed call is repeated.
type Policy struct {
	// Attempts is the most calls made, the first included; values below
	// 1 mean 1.
	Attempts int
	// Retryable reports whether a failure may pass when the call is made
	// again; nil means no failure does.
	Retryable func(error) bool
	// Backoff returns the pause before retry i (1-based); nil means none.
	Backoff func(i int) time.Duration
}

// Do calls call until it succeeds, fails with an error Retryable rejects,
// has been called Attempts times, or ctx ends. It returns the last call's
// result. When ctx ends during a pause, the error wraps ctx.Err() and
// names the failure that was being retried.
func Do[T any](ctx context.Context, p Policy, call func(ctx context.Context) (T, error)) (T, error) {
	for i := 1; ; i++ {
		v, err := call(ctx)
		if err == nil {
			return v, nil
		}
		if p.Retryable == nil || !p.Retryable(err) || i >= p.Attempts || ctx.Err() != nil {
			return v, err
		}
		if p.Backoff == nil {
			continue
		}
		t := time.NewTimer(p.Backoff(i))
		select {
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, fmt.Errorf("%w (after: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// Status reports whether an HTTP answer with this status code is worth
// asking again: rate limits (429), request timeouts (408) and server
// errors (5xx) may pass; a bad request, a missing model or a refused key
// will not.
func Status(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// finalCodes are the error codes of 5xx answers that asking again cannot
// get past: hone-serve's for a sequence left with no token to choose (the
// model's logits NaN, as from a diverged adapter, or an output constraint
// that allowed nothing). The same request meets the same weights and the
// same constraint, so retries would only spend the backoff (seconds) of
// every call before it fails anyway.
var finalCodes = map[string]bool{"logits_not_finite": true, "constraint_no_token": true}

// Answer reports whether an error answer is worth asking again, from its
// HTTP status and the code of its OpenAI-shaped error body ("" when it has
// none): when Status says so, unless the code is one that the same
// request cannot get past.
func Answer(status int, code string) bool {
	return Status(status) && !finalCodes[code]
}

// ContextFull reports whether an error answer refuses the request for the
// model's context, from its status and its OpenAI-shaped error body's
// code, type and message: OpenAI's and hone-serve's code
// context_length_exceeded, or vLLM's 400, whose code is only its status,
// in the words all of them use ("This model's maximum context length is N
// tokens") or in those of vLLM's engine, which refuses what its OpenAI
// layer let through ("The decoder prompt (length N) is longer than the
// maximum model length of M"), or llama.cpp's llama-server, by its error
// type exceed_context_size_error. Collect ends an episode there, and score
// says how to fit a judge's prompt: the same request can never pass.
func ContextFull(status int, code, typ, message string) bool {
	if status != http.StatusBadRequest {
		return false
	}
	return code == "context_length_exceeded" || typ == "exceed_context_size_error" ||
		strings.Contains(message, "maximum context length") || strings.Contains(message, "maximum model length")
}

// Label names an error answer by its HTTP status and the code of its
// error body, as a failed call's error starts: "HTTP 500
// logits_not_finite", or "HTTP 502" without a code. A code that only
// repeats the status is left out: vLLM writes its status as the code
// (a number, which openai-go reads as "500").
func Label(status int, code string) string {
	s := "HTTP " + strconv.Itoa(status)
	if code != "" && code != strconv.Itoa(status) {
		s += " " + code
	}
	return s
}

// Exponential returns the pauses base, 2·base, 4·base, … for retries 1, 2,
// 3, …, each capped at max; max ≤ 0 means no cap, and the pause then
// stops growing where doubling would overflow.
func Exponential(base, max time.Duration) func(i int) time.Duration {
	if max <= 0 {
		max = time.Duration(1<<63 - 1)
	}
	return func(i int) time.Duration {
		d := min(base, max)
		for ; i > 1 && d < max; i-- {
			if d > max/2 {
				return max
			}
			d *= 2
		}
		return d
	}
}

// Jittered shortens each pause of backoff by a random share of up to a
// quarter, so that many clients that failed together do not retry in step.
func Jittered(backoff func(i int) time.Duration) func(i int) time.Duration {
	return func(i int) time.Duration {
		d := backoff(i)
		if d <= 0 {
			return d
		}
		return d - time.Duration(rand.Int64N(int64(d)/4+1))
	}
}

// ServerWait returns the pause an error answer's headers ask for before
// the next call, as of now: Retry-After-Ms (milliseconds, as OpenAI
// sends), else Retry-After (seconds, as hone-serve sends on its 429s and
// while draining, or an HTTP date), at most limit; 0 when neither is there
// or readable. The OpenAI client's own retries would honour them, but
// Hone's callers turn those off and retry through Do, so each caller
// takes the longer of its backoff and this wait.
func ServerWait(h http.Header, now time.Time, limit time.Duration) time.Duration {
	var d time.Duration
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		d = time.Duration(min(ms, float64(limit/time.Millisecond)) * float64(time.Millisecond))
	} else if ra := h.Get("Retry-After"); ra != "" {
		if secs, err := strconv.ParseFloat(ra, 64); err == nil {
			if secs > 0 {
				d = time.Duration(min(secs, limit.Seconds()) * float64(time.Second))
			}
		} else if at, err := http.ParseTime(ra); err == nil {
			d = at.Sub(now)
		}
	}
	return min(max(d, 0), limit)
}
