package fileset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gocloud.dev/blob"
)

// buckets holds the buckets a Set opened, one per bucket URL (scheme,
// bucket and query), for the set's files to share. A bucket is a client:
// s3blob builds each one its own AWS config (files and environment read
// again) and HTTP client, so a bucket opened per file made a new TCP (and
// TLS) connection for every object read: 401 connections to resolve and
// read 200 objects, where one shared bucket reads them over one. A nil
// *buckets opens a bucket per call, which the caller's release closes.
type buckets struct {
	mu     sync.Mutex
	open   map[string]*sharedBucket
	closed bool
	// listed holds, by name, what a listing through these buckets gave of
	// each object it found (size, time), for the object's next Open to
	// take instead of asking the store again (a HEAD per object).
	listed map[string]listedObject
}

// listedObject is what a listing said of an object.
type listedObject struct {
	Size    int64
	ModTime time.Time
}

// sharedBucket is an open bucket and how many callers hold it.
type sharedBucket struct {
	b    *blob.Bucket
	refs int
}

func newBuckets() *buckets {
	return &buckets{open: map[string]*sharedBucket{}, listed: map[string]listedObject{}}
}

// noteListed keeps what a listing gave of the object name, for its next
// Open; a nil or closed cache keeps nothing.
func (c *buckets) noteListed(name string, o *blob.ListObject) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.listed[name] = listedObject{Size: o.Size, ModTime: o.ModTime}
	}
}

// takeListed returns what a listing gave of the object name and forgets
// it: a listing is a snapshot, so it serves the Open that follows it, and
// a later Open (a second epoch, a retry after the object was replaced)
// asks the store.
func (c *buckets) takeListed(name string) (listedObject, bool) {
	if c == nil {
		return listedObject{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.listed[name]
	delete(c.listed, name)
	return o, ok
}

// peekListed is takeListed that leaves what it returns for the Open.
func (c *buckets) peekListed(name string) (listedObject, bool) {
	if c == nil {
		return listedObject{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.listed[name]
	return o, ok
}

// get returns n's bucket and the function that releases it (safe to call
// twice). After Close it opens one bucket per call again, as without a
// cache, so a set still opens its files after its Close.
func (c *buckets) get(ctx context.Context, n blobName, name string) (*blob.Bucket, func() error, error) {
	if c == nil {
		return openOwn(ctx, n, name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return openOwn(ctx, n, name)
	}
	sb := c.open[n.bucket]
	if sb == nil {
		// A failed open is not kept: the next call tries again, and its
		// error names its own URL.
		b, err := n.open(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		sb = &sharedBucket{b: b}
		c.open[n.bucket] = sb
	}
	sb.refs++
	return sb.b, sync.OnceValue(func() error { return c.release(sb) }), nil
}

func openOwn(ctx context.Context, n blobName, name string) (*blob.Bucket, func() error, error) {
	b, err := n.open(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return b, sync.OnceValue(b.Close), nil
}

// release drops a hold on sb, and closes it when the cache was closed
// while it was held (a file closed after its set).
func (c *buckets) release(sb *sharedBucket) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	sb.refs--
	if c.closed && sb.refs == 0 {
		return sb.b.Close()
	}
	return nil
}

// Close closes the buckets no file holds now; a held one is closed when
// its last holder releases it, so that a file still open reads on.
func (c *buckets) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.listed = nil
	var errs []error
	for key, sb := range c.open {
		if sb.refs > 0 {
			continue
		}
		if err := sb.b.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close bucket %s: %w", key, err))
		}
	}
	c.open = nil
	return errors.Join(errs...)
}
