package judge

import (
	"context"
	"sync"
)

// Fake is an in-memory Judge for tests. Answer is called for each request
// with the request's position among all calls (0-based); it returns the
// answer text, which goes through Parse like a server's answer, or an
// error returned as is. Fake is safe for concurrent use.
type Fake struct {
	Answer func(call int, req Request) (string, error)

	mu    sync.Mutex
	calls []Request
}

// Judge records req and answers it.
func (f *Fake) Judge(ctx context.Context, req Request) (Verdict, error) {
	if err := ctx.Err(); err != nil {
		return Verdict{}, err
	}
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, req)
	f.mu.Unlock()
	text, err := f.Answer(n, req)
	usage := Usage{Calls: 1}
	if err != nil {
		return Verdict{}, err
	}
	scores, err := Parse(req, text)
	if err != nil {
		err.(*Error).Usage = usage
		return Verdict{}, err
	}
	return Verdict{Model: req.Model, Scores: scores, Usage: usage}, nil
}

// Calls returns the requests received so far.
func (f *Fake) Calls() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.calls...)
}
