package retry_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/retry"
)

var (
	errTransient = errors.New("HTTP 503")
	errFatal     = errors.New("HTTP 404")
)

func transient(err error) bool { return errors.Is(err, errTransient) }

// failing returns a call that fails with errs in turn, then succeeds with
// its call count, and the count of calls made.
func failing(errs ...error) (func(context.Context) (int, error), *int) {
	n := 0
	return func(context.Context) (int, error) {
		n++
		if n <= len(errs) {
			return 0, errs[n-1]
		}
		return n, nil
	}, &n
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	var pauses []int
	p := retry.Policy{Attempts: 3, Retryable: transient, Backoff: func(i int) time.Duration { pauses = append(pauses, i); return 0 }}
	t.Run("recovers", func(t *testing.T) {
		pauses = nil
		call, n := failing(errTransient, errTransient)
		v, err := retry.Do(ctx, p, call)
		if err != nil || v != 3 || *n != 3 || len(pauses) != 2 || pauses[0] != 1 || pauses[1] != 2 {
			t.Fatalf("v %d err %v calls %d pauses %v, want success on call 3 after pauses 1, 2", v, err, *n, pauses)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		call, n := failing(errTransient, errTransient, errTransient, errTransient)
		if _, err := retry.Do(ctx, p, call); !errors.Is(err, errTransient) || *n != 3 {
			t.Fatalf("err %v after %d calls, want the last failure after 3", err, *n)
		}
	})
	t.Run("not retryable", func(t *testing.T) {
		call, n := failing(errFatal)
		if _, err := retry.Do(ctx, p, call); err != errFatal || *n != 1 {
			t.Fatalf("err %v after %d calls, want the failure after 1", err, *n)
		}
	})
	t.Run("no classifier retries nothing", func(t *testing.T) {
		call, n := failing(errTransient)
		if _, err := retry.Do(ctx, retry.Policy{Attempts: 5}, call); err == nil || *n != 1 {
			t.Fatalf("err %v after %d calls", err, *n)
		}
	})
	t.Run("attempts below 1 mean 1", func(t *testing.T) {
		call, n := failing(errTransient)
		if _, err := retry.Do(ctx, retry.Policy{Retryable: transient}, call); err == nil || *n != 1 {
			t.Fatalf("err %v after %d calls", err, *n)
		}
	})
	t.Run("ended context stops the retries", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		n := 0
		_, err := retry.Do(ctx, retry.Policy{Attempts: 5, Retryable: transient}, func(context.Context) (int, error) {
			n++
			cancel()
			return 0, errTransient
		})
		if !errors.Is(err, errTransient) || n != 1 {
			t.Fatalf("err %v after %d calls, want the failure after 1", err, n)
		}
	})
}

// A stop during a pause returns at once, naming the failure.
func TestDoStopsDuringPause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	call, n := failing(errTransient, errTransient)
	p := retry.Policy{Attempts: 3, Retryable: transient, Backoff: func(int) time.Duration {
		cancel()
		return time.Hour
	}}
	_, err := retry.Do(ctx, p, call)
	if !errors.Is(err, context.Canceled) || errors.Is(err, errTransient) || err.Error() != "context canceled (after: HTTP 503)" || *n != 1 {
		t.Fatalf("err %v after %d calls", err, *n)
	}
}

func TestStatus(t *testing.T) {
	for code, want := range map[int]bool{200: false, 400: false, 401: false, 404: false, 408: true, 429: true, 500: true, 502: true, 503: true, 504: true} {
		if retry.Status(code) != want {
			t.Errorf("Status(%d) = %v, want %v", code, !want, want)
		}
	}
}

func TestExponential(t *testing.T) {
	b := retry.Exponential(time.Second, 5*time.Second)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		if got := b(i + 1); got != want {
			t.Errorf("capped(%d) = %v, want %v", i+1, got, want)
		}
	}
	u := retry.Exponential(500*time.Millisecond, 0)
	for i, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second} {
		if got := u(i + 1); got != want {
			t.Errorf("uncapped(%d) = %v, want %v", i+1, got, want)
		}
	}
	// Far out, the pause saturates instead of overflowing into a negative.
	for _, i := range []int{40, 64, 100, 1000} {
		if got := u(i); got != time.Duration(math.MaxInt64) {
			t.Errorf("uncapped(%d) = %v, want the largest duration", i, got)
		}
	}
}

func TestJittered(t *testing.T) {
	j := retry.Jittered(retry.Exponential(time.Second, 0))
	for i := 1; i <= 11; i++ {
		want := time.Second << (i - 1)
		if got := j(i); got > want || got < want-want/4 {
			t.Fatalf("jittered(%d) = %v, want within [%v, %v]", i, got, want-want/4, want)
		}
	}
	if got := retry.Jittered(retry.Exponential(time.Second, 0))(1000); got <= 0 {
		t.Fatalf("jittered saturated pause %v, want positive", got)
	}
	if got := retry.Jittered(func(int) time.Duration { return 0 })(1); got != 0 {
		t.Fatalf("jittered zero pause = %v", got)
	}
}

// An error answer is retried as its status says, except for hone-serve's
// codes of a sequence left with no token to choose, whatever the status.
func TestAnswer(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   bool
	}{
		{500, "", true},
		{503, "", true},
		{429, "rate_limit_exceeded", true},
		{500, "server_error", true},
		{500, "logits_not_finite", false},
		{500, "constraint_no_token", false},
		{503, "logits_not_finite", false},
		{400, "", false},
		{404, "model_not_found", false},
	} {
		if got := retry.Answer(c.status, c.code); got != c.want {
			t.Errorf("Answer(%d, %q) = %v, want %v", c.status, c.code, got, c.want)
		}
	}
}

func TestLabel(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   string
	}{
		{500, "logits_not_finite", "HTTP 500 logits_not_finite"},
		{502, "", "HTTP 502"},
		{500, "500", "HTTP 500"}, // vLLM's code is its status
		{400, "500", "HTTP 400 500"},
	} {
		if got := retry.Label(c.status, c.code); got != c.want {
			t.Errorf("Label(%d, %q) = %q, want %q", c.status, c.code, got, c.want)
		}
	}
}

// TestServerWait reads the pause an error answer asks for from each form
// its headers take, capped at the limit; unreadable or past ones are 0.
func TestServerWait(t *testing.T) {
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		headers map[string]string
		want    time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "junk", "Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "-4"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "86400"}, time.Minute},
		{map[string]string{"Retry-After-Ms": "1e12"}, time.Minute},
		{map[string]string{"Retry-After": now.Add(time.Hour).Format(http.TimeFormat)}, time.Minute},
	} {
		h := http.Header{}
		for k, v := range c.headers {
			h.Set(k, v)
		}
		if got := retry.ServerWait(h, now, time.Minute); got != c.want {
			t.Errorf("ServerWait(%v) = %v, want %v", c.headers, got, c.want)
		}
	}
}
