package judge

import (
	"context"
	"errors"
	"maps"
	"sync"
)

// Meter is a decorator that adds up the usage of every call through it,
// successful or not, per requested judge model. It is safe for concurrent
// use.
type Meter struct {
	Next Judge

	mu       sync.Mutex
	usage    map[string]Usage
	answered bool
}

// Judge calls Next and records the usage.
func (m *Meter) Judge(ctx context.Context, req Request) (Verdict, error) {
	v, err := m.Next.Judge(ctx, req)
	u := v.Usage
	if err != nil {
		u = usageOf(err)
	}
	m.mu.Lock()
	if m.usage == nil {
		m.usage = make(map[string]Usage)
	}
	m.usage[req.Model] = m.usage[req.Model].Add(u)
	if fromServer(v, err) {
		m.answered = true
	}
	m.mu.Unlock()
	return v, err
}

// Answered reports whether the judge itself (not a cache) has answered a
// call through m: after that, a refusal (401, 403, 404) is news of the
// server's state, such as a restarted vLLM without its adapter yet, rather
// than proof that the model name or key is wrong.
func (m *Meter) Answered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answered
}

// Usage returns the totals per judge model.
func (m *Meter) Usage() map[string]Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.usage)
}

// fromServer reports whether a call came back from the judge server
// itself: a verdict not served from a cache, or a 200 that could not be
// used (an answer that did not parse, a refusal), which shows the server
// serves the model as much as a verdict does.
func fromServer(v Verdict, err error) bool {
	if err == nil {
		return v.Usage.CacheHits == 0
	}
	var je *Error
	return errors.As(err, &je) && (je.Kind == "malformed" || je.Kind == "refusal")
}
