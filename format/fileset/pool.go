package fileset

import "context"

// Pool reads and writes whole files and objects by name, as ReadFile and
// WriteFile do, with its calls sharing one bucket per bucket URL until
// Close: a store of many small objects (the judge cache: one object a
// judged group) is read and written over one client's connections, where
// each call of ReadFile or WriteFile opens a bucket of its own (an AWS
// config read again, a new HTTP client, a new TCP and TLS connection,
// and, with web-identity credentials, a new token exchange). Local paths
// are as with the functions. Safe for concurrent use.
type Pool struct{ c *buckets }

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{c: newBuckets()} }

// ReadFile is the function ReadFile over the pool's buckets.
func (p *Pool) ReadFile(ctx context.Context, name string) ([]byte, error) {
	return readIn(ctx, p.c, name)
}

// WriteFile is the function WriteFile over the pool's buckets.
func (p *Pool) WriteFile(ctx context.Context, name string, data []byte) error {
	return writeIn(ctx, p.c, name, data)
}

// Close closes the pool's buckets (one in use is closed when its call
// ends). Calls after Close open a bucket each, as the functions do.
func (p *Pool) Close() error { return p.c.Close() }
