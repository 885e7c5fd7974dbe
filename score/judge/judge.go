package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrFailed is wrapped by every error that means "the judge did not give a
// usable verdict": transport failures, timeouts, malformed answers.
var ErrFailed = errors.New("judge failed")

// Request is one judge call.
type Request struct {
	Model string // judge model name as the server knows it
	// PromptVersion names the prompt layout that produced System and User;
	// it is part of the cache key, so changing the layout invalidates old
	// answers even where the text happens to be equal.
	PromptVersion string
	System        string
	User          string
	// IDs are the trajectory ids the answer must score, each exactly once.
	IDs []string
	// Temperature is the sampling temperature asked of the judge; nil
	// leaves it to the judge (OpenAIOptions.Temperature, else the
	// server's default). It is part of the cache key: a verdict sampled
	// at one temperature does not answer a request for another.
	Temperature *float64
}

// Score is the judge's verdict on one trajectory.
type Score struct {
	ID          string  `json:"trajectory_id"`
	Explanation string  `json:"explanation"`
	Score       float64 `json:"score"`
}

// Usage counts what judge calls cost.
type Usage struct {
	Calls            int64 // requests sent to a server (retries included)
	CacheHits        int64 // verdicts served from a cache instead
	Retries          int64 // calls repeated after a failure
	PromptTokens     int64
	CompletionTokens int64
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Calls:            u.Calls + v.Calls,
		CacheHits:        u.CacheHits + v.CacheHits,
		Retries:          u.Retries + v.Retries,
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
	}
}

// Verdict is a validated judge answer.
type Verdict struct {
	Model  string  // model that answered (as the server reported it, or Request.Model)
	Scores []Score // in the order of Request.IDs
	Usage  Usage
}

// Judge scores the trajectories described by a request. Implementations
// return a verdict that passed Parse's checks, or an error wrapping
// ErrFailed (or wrapping the context's error when ctx ended, with what
// the calls before the stop cost where there were any).
type Judge interface {
	Judge(ctx context.Context, req Request) (Verdict, error)
}

// Func adapts a function to the Judge interface.
type Func func(ctx context.Context, req Request) (Verdict, error)

// Judge calls f.
func (f Func) Judge(ctx context.Context, req Request) (Verdict, error) { return f(ctx, req) }

// Error is a judge failure. Retryable says whether asking again may help;
// Usage is what the failed call cost (a malformed answer still used tokens).
type Error struct {
	Kind      string // "malformed", "http", "timeout", "transport", "refusal"
	Retryable bool
	// Status is the HTTP status of an "http" failure; 0 for the others.
	Status int
	Usage  Usage
	// RetryAfter is how long the server asked to be left alone before
	// the next call (its Retry-After-Ms or Retry-After header, at most
	// MaxServerWait); 0 when it said nothing. Retry pauses at least this.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string { return fmt.Sprintf("judge %s: %v", e.Kind, e.Err) }

// Unwrap returns both ErrFailed and the cause, so errors.Is works for each.
func (e *Error) Unwrap() []error { return []error{ErrFailed, e.Err} }

// stopped is the caller's stop (ctx's error, wrapped as it came) with
// what the calls before it cost, so that a run's usage counts them too.
// It is not a judge failure: errors.Is finds the context's error in it,
// never ErrFailed.
type stopped struct {
	err   error
	usage Usage
}

func (e *stopped) Error() string { return e.err.Error() }
func (e *stopped) Unwrap() error { return e.err }

// withUsage returns err carrying usage u when it is not a judge failure
// (whose Error.Usage says what it cost); err unchanged when u is zero.
func withUsage(err error, u Usage) error {
	if u == (Usage{}) {
		return err
	}
	if s, ok := err.(*stopped); ok {
		err = s.err
	}
	return &stopped{err: err, usage: u}
}

// usageOf returns the usage an error carries, if any.
func usageOf(err error) Usage {
	var je *Error
	if errors.As(err, &je) {
		return je.Usage
	}
	var s *stopped
	if errors.As(err, &s) {
		return s.usage
	}
	return Usage{}
}

// Refused reports whether err is a judge server's 401, 403 or 404, and
// which: a key it does not take, or a model it does not have. Every
// request with that key and model gets the same answer, so a run that
// got one has nothing left to ask the judge.
func Refused(err error) (status int, ok bool) {
	var je *Error
	if !errors.As(err, &je) {
		return 0, false
	}
	switch je.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return je.Status, true
	}
	return 0, false
}

// retryable reports whether err is a judge failure worth repeating.
func retryable(err error) bool {
	var je *Error
	return errors.As(err, &je) && je.Retryable
}
