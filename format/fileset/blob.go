package fileset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// blobStore is an object store reached through gocloud.dev/blob: s3://,
// gs://, azblob:// and whatever other scheme a linked driver registered
// with blob.DefaultURLMux (format/fileset/blobdrivers links the clouds').
// A name is scheme://bucket/key?query; the query (endpoint, region,
// use_path_style…) opens the bucket and is kept on every name derived from
// it, so a listed name opens as it is. Folders are key prefixes ending in
// "/". A store with buckets (a Set's) shares one bucket per bucket URL
// among its calls; without, each call opens its own.
type blobStore struct{ c *buckets }

// ReadAhead is how many bytes an object read fetches at least per request
// when reads go in order (each starts where the last one ended): a Parquet
// reader reads a column chunk's pages a few KiB at a time, and each
// request to an object store costs a round trip. A read elsewhere (the
// next column) fetches at least ReadAround bytes, so a reader that jumps
// does not pay for a MiB each time. A read in the last ReadAround bytes
// fetches all of them (a Parquet footer and its length in one request),
// and a read in the first HeadWindow bytes fetches those (the magic
// number). No window reaches past the object's end, into bytes already
// held, or across the edge of a range announced by File.WillRead.
const (
	ReadAhead  = 1 << 20
	ReadAround = 64 << 10
	HeadWindow = 4 << 10
)

// MaxWillRead is the most bytes a range announced by File.WillRead is
// fetched in one request and held; a larger range is read in ReadAhead
// windows that stay inside it.
const MaxWillRead = 64 << 20

// maxSpans is how many fetched ranges an open object keeps at most (the
// footer's among them); the least recently read goes first.
const maxSpans = 4

// bodyRetries is how many more times a ranged read is tried when the
// connection breaks while its body streams. Requests that fail outright
// are retried by the store's client (the AWS, Google and Azure SDKs each
// retry throttling, 5xx and dropped connections with backoff).
const bodyRetries = 3

// blobName is a parsed object-store name.
type blobName struct {
	bucket string // scheme://bucket?query, what blob.OpenBucket takes
	key    string // the object key, without a leading "/"
	prefix string // scheme://bucket/ , put before a key to name it
	query  string // "?query" or ""
}

func parseBlobName(name string) (blobName, error) {
	u, err := url.Parse(name)
	if err != nil {
		return blobName{}, &ArgError{Arg: name, query: true, Err: fmt.Errorf("not a URL: %w", err)}
	}
	if u.Host == "" {
		return blobName{}, &ArgError{Arg: name, Err: fmt.Errorf("no bucket: write %s://BUCKET/KEY", u.Scheme)}
	}
	if u.Fragment != "" {
		// The message shows name without its query, which may come before
		// the "#" and hide it: name the fragment itself, as written, up to
		// a "?" (the query's values, written after the fragment).
		frag := name[strings.Index(name, "#"):]
		frag, _, _ = strings.Cut(frag, "?")
		return blobName{}, &ArgError{Arg: name, Err: fmt.Errorf("the URL fragment %q names no object; write # in a key as %%23", frag)}
	}
	q := ""
	if u.RawQuery != "" {
		q = "?" + u.RawQuery
	}
	return blobName{
		bucket: u.Scheme + "://" + u.Host + q,
		key:    cleanKey(u.Path),
		prefix: u.Scheme + "://" + u.Host + "/",
		query:  q,
	}, nil
}

// cleanKey is a URL's path as an object key: without a leading "/" and
// with each run of "/" made one, so that s3://b/p/, s3://b/p// and
// s3://b//p/ name one folder, as they would on a file system. Taken as
// written they named keys with an empty element ("p//x", "/p/x"), which
// a listing of the folder p never shows: an output written under a
// folder flag given with a trailing "/" was never read back. A key with
// an empty element (written by another tool) cannot be named.
func cleanKey(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && (b.Len() == 0 || p[i-1] == '/') {
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// name puts a key back into the caller's form. The characters a URL would
// read otherwise ("%", "?", "#") are escaped, so that the name opens the
// key again.
func (n blobName) name(key string) string {
	return n.prefix + escapeKey(key) + n.query
}

// keyEscaper escapes what a URL's path would read otherwise.
var keyEscaper = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// escapeKey is key (or a part of one) as written in a URL's path.
func escapeKey(key string) string { return keyEscaper.Replace(key) }

// openBlob parses name and opens its bucket (errors name the URL); the
// caller calls release when done with it.
func (s blobStore) openBlob(ctx context.Context, name string) (n blobName, b *blob.Bucket, release func() error, err error) {
	n, err = parseBlobName(name)
	if err != nil {
		return n, nil, nil, err
	}
	b, release, err = s.c.get(ctx, n, name)
	return n, b, release, err
}

// dirPrefix is key taken as a folder: the prefix of the keys in it ("" for
// the bucket's top, else ending in "/").
func dirPrefix(key string) string {
	if (blobName{key: key}).isDir() {
		return key
	}
	return key + "/"
}

// isDir reports whether n names a folder (the bucket's top, or a key
// ending in "/") rather than an object.
func (n blobName) isDir() bool { return n.key == "" || strings.HasSuffix(n.key, "/") }

func (n blobName) open(ctx context.Context, name string) (*blob.Bucket, error) {
	b, err := blob.OpenBucket(ctx, n.bucket)
	if err != nil && n.query != "" {
		// A "?" meant as a glob's or a key's ends the key: the rest is
		// taken for the query, whose "parameter" the driver does not know.
		return nil, &ArgError{Arg: name, query: true, Err: fmt.Errorf("open bucket: %w (the query begins at the URL's first \"?\": write a \"?\" in a key as %%3F; an object-store glob takes * and [...], not ?)", err)}
	}
	if err != nil {
		return nil, &ArgError{Arg: name, query: true, Err: fmt.Errorf("open bucket: %w", err)}
	}
	return b, nil
}

// blobErr makes err name the URL as a message shows it (DisplayName: no
// bucket query), makes an absent object match fs.ErrNotExist and a
// refused one fs.ErrPermission, as local files do, and adds what to set
// where the SDK's words do not say it (storeHint).
func blobErr(name string, err error) error {
	// The driver's error may quote the endpoint, password and all (its
	// own "failed to parse endpoint URL" of one it cannot parse).
	hint := storeHint(name, err)
	err = maskErr(name, err)
	name = DisplayName(name)
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("%s: %w (%w)", name, fs.ErrNotExist, err)
	case gcerrors.PermissionDenied:
		return fmt.Errorf("%s: %w (%w)", name, fs.ErrPermission, err)
	}
	if noCredentials(err) {
		err = noCredentialsError{err}
	}
	return fmt.Errorf("%s: %w%s", name, err, hint)
}

// objectErr is blobErr for the error of a request about the object
// n.key. S3 answers NotFound alike for a missing object and a missing
// bucket (NoSuchBucket): then a listing of one key asks after the bucket,
// so that a misspelt bucket is named as such, not taken for a missing
// object in it.
func objectErr(ctx context.Context, b *blob.Bucket, name string, n blobName, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		if ok, aerr := b.IsAccessible(ctx); aerr == nil && !ok {
			return fmt.Errorf("%s: %w", DisplayName(name), &noBucketError{bucket: n.prefix, err: err})
		}
	}
	return blobErr(name, err)
}

// noBucketError is a listing's NotFound: a listing of a folder that holds
// nothing succeeds, so one not found means that the bucket is not there.
type noBucketError struct {
	bucket string // as the URL names it: s3://BUCKET/
	err    error  // the store's; nil where a check found it so
}

func (e *noBucketError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("the bucket %s does not exist", e.bucket)
	}
	return fmt.Sprintf("the bucket %s does not exist (%v)", e.bucket, e.err)
}

func (e *noBucketError) Unwrap() error { return e.err }

// Is makes it match ErrNoBucket and fs.ErrNotExist.
func (e *noBucketError) Is(target error) bool {
	return target == ErrNoBucket || target == fs.ErrNotExist
}

// listErr is blobErr for the error of a listing in n's bucket.
func listErr(name string, n blobName, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%s: %w", DisplayName(name), &noBucketError{bucket: n.prefix, err: err})
	}
	return blobErr(name, err)
}

func (s blobStore) Stat(ctx context.Context, name string) (bool, error) {
	n, b, release, err := s.openBlob(ctx, name)
	if err != nil {
		return false, err
	}
	defer release()
	if !n.isDir() {
		_, err := b.Attributes(ctx, n.key)
		if err == nil {
			return false, nil
		}
		if gcerrors.Code(err) != gcerrors.NotFound {
			return false, blobErr(name, err)
		}
	}
	// A folder is a prefix that holds something (the bucket itself always
	// is one, once it answers).
	dir := n.key
	if dir != "" && !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	objs, _, err := b.ListPage(ctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: dir, Delimiter: "/"})
	if err != nil {
		return false, listErr(name, n, err)
	}
	if len(objs) == 0 && dir != "" {
		return false, blobErr(name, fmt.Errorf("no object or folder of that name: %w", fs.ErrNotExist))
	}
	return true, nil
}

func (s blobStore) Info(ctx context.Context, name string) (FileInfo, error) {
	n, err := parseBlobName(name)
	if err != nil {
		return FileInfo{}, err
	}
	if n.isDir() {
		return FileInfo{}, argErrorf(name, "names a folder; name an object")
	}
	b, release, err := s.c.get(ctx, n, name)
	if err != nil {
		return FileInfo{}, err
	}
	defer release()
	a, err := b.Attributes(ctx, n.key)
	if err != nil {
		return FileInfo{}, objectErr(ctx, b, name, n, err)
	}
	return FileInfo{Size: a.Size, ModTime: a.ModTime, ETag: a.ETag}, nil
}

// list returns the objects directly under the folder dir (a key prefix
// ending in "/", or "" for the bucket's top), sorted by key, with the
// size and time the listing gave each. A key ending
// in "/" is left out: it is a folder marker (the AWS console's "Create
// folder", MinIO's console, s3fs and rclone make an empty object "d/"),
// a folder, not a file, and its name would not open (Open refuses a name
// ending in "/"). S3 lists only dir's own marker among the objects (a
// deeper one is inside a common prefix); gofakes3 lists "dir/sub/" too.
func (n blobName) list(ctx context.Context, b *blob.Bucket, name, dir string) ([]*blob.ListObject, error) {
	var objs []*blob.ListObject
	it := b.List(&blob.ListOptions{Prefix: dir, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, listErr(name, n, err)
		}
		if !obj.IsDir && !strings.HasSuffix(obj.Key, "/") {
			objs = append(objs, obj)
		}
	}
	slices.SortFunc(objs, func(a, b *blob.ListObject) int { return strings.Compare(a.Key, b.Key) })
	return objs, nil
}

func (s blobStore) List(ctx context.Context, dir string) ([]string, error) {
	n, b, release, err := s.openBlob(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer release()
	objs, err := n.list(ctx, b, dir, dirPrefix(n.key))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = n.name(o.Key)
		s.c.noteListed(names[i], o)
	}
	return names, nil
}

// Glob matches the last element of the key (path.Match syntax) against the
// objects in its folder; glob characters in a folder's name are refused,
// since an object store would have to list the whole bucket for them.
func (s blobStore) Glob(ctx context.Context, pattern string) ([]string, error) {
	n, err := parseBlobName(pattern)
	if err != nil {
		return nil, err
	}
	dir, elem := path.Split(n.key)
	if hasMeta(dir) {
		return nil, argErrorf(pattern, "glob characters are allowed only in the last element of an object-store URL")
	}
	if _, err := path.Match(elem, ""); err != nil {
		return nil, err
	}
	b, release, err := s.c.get(ctx, n, pattern)
	if err != nil {
		return nil, err
	}
	defer release()
	objs, err := n.list(ctx, b, pattern, dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		if ok, _ := path.Match(elem, path.Base(o.Key)); ok {
			names = append(names, n.name(o.Key))
			s.c.noteListed(names[len(names)-1], o)
		}
	}
	return names, nil
}

func (s blobStore) Open(ctx context.Context, name string) (*File, error) {
	n, err := parseBlobName(name)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, argErrorf(name, "names a folder; name an object")
	}
	b, release, err := s.c.get(ctx, n, name)
	if err != nil {
		return nil, err
	}
	r := &blobReader{ctx: ctx, b: b, release: release, key: n.key, name: name, next: -1, since: "opened"}
	if o, ok := s.c.takeListed(name); ok {
		// The set's listing gave the size and time a HEAD would: asking
		// again doubled the requests of reading a folder of small
		// objects. A read still checks them, so an object replaced
		// since is refused, not mixed.
		r.size, r.modTime, r.since = o.Size, o.ModTime, "listed"
	} else {
		a, err := b.Attributes(ctx, n.key)
		if err != nil {
			err = objectErr(ctx, b, name, n, err)
			release()
			return nil, err
		}
		r.size, r.modTime = a.Size, a.ModTime
	}
	return &File{Name: name, Size: r.size, r: r, c: r}, nil
}

// blobReader reads an object by ranged requests (see ReadAhead for their
// sizes), keeping what it fetched in a few spans so that no byte is
// fetched twice while they are held: the footer stays for the whole open,
// the rest is dropped least recently used first. It is safe for
// concurrent use.
type blobReader struct {
	// ctx is the context of the Open that made the reader: ReadAt has none
	// of its own, and the reads belong to that Open.
	ctx context.Context
	b   *blob.Bucket
	// release lets go of b: closes it, or drops the hold on a set's
	// shared bucket.
	release func() error
	key     string
	name    string
	size    int64
	// modTime is the object's at Open (zero where the store gives none):
	// with size, what tells that the object was replaced since.
	modTime time.Time
	// since says where size and modTime come from, for the error of a
	// read that finds them changed: "opened" (a HEAD at Open) or "listed"
	// (the set's listing).
	since string

	mu    sync.Mutex
	spans []span // disjoint, sorted by offset
	tick  uint64 // counts reads, for least-recently-used order
	next  int64  // where the last ReadAt ended; -1 before the first
	// [willOff, willEnd) is the range last announced by WillRead; empty
	// when willEnd <= willOff.
	willOff, willEnd int64
}

// span is bytes [off, off+len(b)) of the object.
type span struct {
	off  int64
	b    []byte
	used uint64 // tick of the last read from it
}

func (s span) end() int64 { return s.off + int64(len(s.b)) }

// WillRead notes that the next reads fall in [off, off+n), and drops the
// spans inside the range announced before that the new one does not
// touch: the reader has moved on, so one row group is held, not several.
func (r *blobReader) WillRead(off, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldOff, oldEnd := r.willOff, r.willEnd
	r.willOff, r.willEnd = max(off, 0), min(off+max(n, 0), r.size)
	r.spans = slices.DeleteFunc(r.spans, func(s span) bool {
		inOld := s.off >= oldOff && s.end() <= oldEnd
		touchesNew := s.off < r.willEnd && s.end() > r.willOff
		return inOld && !touchesNew
	})
}

func (r *blobReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: read at negative offset %d", DisplayName(r.name), off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := p
	if rest := r.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	inOrder := off == r.next
	r.next = off + int64(len(want))
	r.tick++
	n := 0
	for n < len(want) {
		at := off + int64(n)
		i, held := r.find(at)
		if held {
			s := &r.spans[i]
			s.used = r.tick
			n += copy(want[n:], s.b[at-s.off:])
			continue
		}
		// Bytes [lo, hi) around at are not held: spans[i-1] ends at or
		// before lo, spans[i] starts at hi.
		lo, hi := int64(0), r.size
		if i > 0 {
			lo = r.spans[i-1].end()
		}
		if i < len(r.spans) {
			hi = r.spans[i].off
		}
		from, to := r.window(at, inOrder, lo, hi)
		if k := min(int64(len(want)-n), hi-at); from == at && k >= to-from {
			// A read as large as the window goes straight into p.
			if err := r.fetch(want[n:n+int(k)], at); err != nil {
				return n, err
			}
			n += int(k)
			continue
		}
		buf := make([]byte, to-from)
		if err := r.fetch(buf, from); err != nil {
			return n, err
		}
		r.insert(i, span{off: from, b: buf, used: r.tick})
	}
	if len(want) < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// find returns the span holding at, or where a span starting at at would
// go.
func (r *blobReader) find(at int64) (int, bool) {
	i, _ := slices.BinarySearchFunc(r.spans, at, func(s span, at int64) int {
		switch {
		case s.end() <= at:
			return -1
		case s.off > at:
			return 1
		}
		return 0
	})
	return i, i < len(r.spans) && r.spans[i].off <= at
}

// window is the range [from, to) to fetch for a read at at, inside the
// bytes [lo, hi) that are not held.
func (r *blobReader) window(at int64, inOrder bool, lo, hi int64) (from, to int64) {
	from, to = at, at+ReadAround
	switch {
	case at >= r.willOff && at < r.willEnd:
		// The announced range: all of it, up to MaxWillRead, or in-order
		// windows that stay inside it.
		to = r.willEnd
		if to-at > MaxWillRead {
			to = at + ReadAhead
		}
	case at >= r.size-ReadAround:
		from, to = r.size-ReadAround, r.size
	case at < HeadWindow:
		to = HeadWindow
	case inOrder:
		to = at + ReadAhead
	}
	if at < r.willOff {
		to = min(to, r.willOff)
	}
	return max(from, lo, 0), min(to, hi, r.size)
}

// insert puts s at index i and drops the least recently read spans beyond
// maxSpans, keeping s and the span at the object's end (the footer).
func (r *blobReader) insert(i int, s span) {
	r.spans = slices.Insert(r.spans, i, s)
	for len(r.spans) > maxSpans {
		drop := -1
		for j, t := range r.spans {
			if t.used == s.used || t.end() == r.size {
				continue
			}
			if drop < 0 || t.used < r.spans[drop].used {
				drop = j
			}
		}
		if drop < 0 {
			return
		}
		r.spans = slices.Delete(r.spans, drop, drop+1)
	}
}

// fetch fills p with the object's bytes at off. A body that breaks off is
// asked for again from where it broke, bodyRetries times, with backoff.
func (r *blobReader) fetch(p []byte, off int64) error {
	got := 0
	var last error
	for try := 0; try <= bodyRetries; try++ {
		if try > 0 {
			if err := sleep(r.ctx, time.Duration(50<<try)*time.Millisecond); err != nil {
				return fmt.Errorf("%s: %w", DisplayName(r.name), err)
			}
		}
		rd, err := r.b.NewRangeReader(r.ctx, r.key, off+int64(got), int64(len(p)-got), nil)
		if err != nil {
			return blobErr(r.name, fmt.Errorf("read bytes %d-%d: %w", off+int64(got), off+int64(len(p))-1, err))
		}
		if rd.Size() != r.size || !sameModTime(r.modTime, rd.ModTime()) {
			// Its bytes now are another object's: mixed with those read
			// before, they would be neither.
			rd.Close()
			return fmt.Errorf("%s: %w since it was %s (%d bytes then, %d now); open it again", DisplayName(r.name), errChanged, r.since, r.size, rd.Size())
		}
		k, err := io.ReadFull(rd, p[got:])
		rd.Close()
		got += k
		if err == nil {
			return nil
		}
		if r.ctx.Err() != nil {
			return fmt.Errorf("%s: %w", DisplayName(r.name), r.ctx.Err())
		}
		last = err
	}
	return fmt.Errorf("%s: read bytes %d-%d: the connection broke %d times, last: %w", DisplayName(r.name), off, off+int64(len(p))-1, bodyRetries+1, last)
}

func (r *blobReader) Close() error { return r.release() }

// sameModTime reports whether an object's modification times as the store
// gave them at Open (Attributes) and at a read can be of one version;
// either may be zero (not given). They are compared to the second: GCS
// gives Attributes its "updated" time to the millisecond, and a read
// (gcsblob reads by the XML API) its Last-Modified header, in whole
// seconds.
func sameModTime(open, read time.Time) bool {
	return open.IsZero() || read.IsZero() || open.Truncate(time.Second).Equal(read.Truncate(time.Second))
}

// errChanged is matched by the error of a read of an object that was
// replaced since it was opened.
var errChanged = errors.New("the object was replaced")

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s blobStore) Create(ctx context.Context, name string) (Output, error) {
	n, err := parseBlobName(name)
	if err != nil {
		return nil, fmt.Errorf("output %w", err)
	}
	if n.isDir() {
		return nil, fmt.Errorf("output %w", argErrorf(name, "names a folder; name an object"))
	}
	f, err := os.CreateTemp("", ".hone-upload.tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create output %q: %w", DisplayName(name), err)
	}
	// The staged bytes are read back only through f, so its name goes at
	// once: a writer killed with SIGKILL (the OOM killer, a lost node)
	// then leaves nothing in $TMPDIR, whose space the kernel frees with
	// the last descriptor. Where an open file cannot be removed
	// (Windows), Commit and Abort remove it by name.
	named := os.Remove(f.Name()) != nil
	return &blobOutput{ctx: ctx, c: s.c, n: n, name: name, f: f, named: named}, nil
}

// blobOutput is an object written to a local temporary file first and
// uploaded by Commit in one request (or one multipart upload), which the
// store makes visible whole or not at all; the upload is retried from the
// file, which it can read again, and kept in a local file where it fails
// (Commit).
type blobOutput struct {
	ctx  context.Context // Create's: the upload belongs to it
	c    *buckets        // the buckets it shares (nil: one of its own)
	n    blobName
	name string
	f    *os.File
	// named: f still has its name in $TMPDIR, to remove once closed.
	named bool
	done  bool
	// held: the caller holds the bytes (WriteFile), so a failed upload
	// leaves no copy of them (keep) to clean up after.
	held bool
}

// Write stages p. A failure names the output, as writeErr does for a
// file: the staged file's own name is unlinked at once (Create) and was
// never the user's.
func (o *blobOutput) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	if err != nil {
		return n, writeErr(o.name, err)
	}
	return n, nil
}

func (o *blobOutput) Name() string { return o.name }

func (o *blobOutput) Commit() error {
	if o.done {
		return fmt.Errorf("output %q: already closed", DisplayName(o.name))
	}
	o.done = true
	defer o.discard()
	err := o.uploadRetried()
	if err == nil {
		return nil
	}
	if o.held {
		return fmt.Errorf("write output %w", err)
	}
	kept, kerr := o.keep()
	if kerr != nil {
		return fmt.Errorf("write output %w; its bytes are lost too: %w", err, kerr)
	}
	how := "upload it to " + DisplayName(o.name)
	if strings.HasPrefix(o.name, "s3://") {
		how = fmt.Sprintf("upload it with `aws s3 cp %s %s`", shellWord(kept), shellWord(DisplayName(o.name)))
	}
	return &unsentError{err: err, msg: fmt.Sprintf("write output %v; its bytes are kept in %s: %s", err, kept, how)}
}

// ErrUnsent is matched by the error of a Commit whose upload failed and
// whose bytes were kept in a local file, which the error's text names: a
// program that prints only "interrupted" for a stopped run prints it.
var ErrUnsent = errors.New("output kept in a local file")

// unsentError is Commit's error naming the local file kept (ErrUnsent).
type unsentError struct {
	err error
	msg string
}

func (e *unsentError) Error() string { return e.msg }

func (e *unsentError) Unwrap() error { return e.err }

func (e *unsentError) Is(target error) bool { return target == ErrUnsent }

// shellWord is s as one word of a POSIX shell command, quoted where it
// holds more than letters, digits and ./:_-+=@%, (a working directory
// or a key with a space or a quote), so that the command an error gives
// runs as printed.
func shellWord(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("./:_-+=@%,", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// uploadRetries is how many times a failed upload is tried again whole,
// after 1 s and then 4 s: the SDK's own 3 attempts at a request end
// within seconds, and an output is often the end of hours of work, so a
// store that is down for longer (503 SlowDown under load, a restart) gets
// a few seconds more.
const uploadRetries = 2

// uploadRetried uploads the staged file, tried again where the failure
// may pass: not for a bad URL, a missing bucket, a refusal or a cancelled
// context.
func (o *blobOutput) uploadRetried() error {
	for try := 0; ; try++ {
		if _, err := o.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("%q: %w", DisplayName(o.name), err)
		}
		err := o.upload()
		if err == nil || try == uploadRetries || o.ctx.Err() != nil || errors.Is(err, ErrBadArgument) {
			return err
		}
		switch gcerrors.Code(err) {
		case gcerrors.NotFound, gcerrors.PermissionDenied, gcerrors.InvalidArgument, gcerrors.FailedPrecondition:
			return err
		}
		if serr := sleep(o.ctx, time.Second<<(2*try)); serr != nil {
			return err
		}
	}
}

// keep copies the staged bytes of an output whose upload failed to a
// local file that stays, and returns its absolute name: in the working
// directory, where the user looks first, or else in $TMPDIR. Written
// under a dot name and renamed, it is whole where it exists.
func (o *blobOutput) keep() (string, error) {
	base := path.Base(o.n.key)
	ext := path.Ext(base)
	pattern := ".hone-unsent-" + strings.TrimSuffix(base, ext) + "-*" + ext
	var errs []error
	for _, dir := range []string{".", os.TempDir()} {
		name, err := o.keepIn(dir, pattern)
		if err == nil {
			return name, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// keepIn writes the staged bytes to a new file in dir named after
// pattern less its leading dot.
func (o *blobOutput) keepIn(dir, pattern string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("keep unsent output: %w", err)
	}
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("keep unsent output: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone already once renamed
	if _, err := o.f.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return "", fmt.Errorf("keep unsent output: read staged bytes: %w", err)
	}
	if _, err := io.Copy(tmp, o.f); err != nil {
		tmp.Close()
		return "", fmt.Errorf("keep unsent output in %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("keep unsent output in %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("keep unsent output in %s: %w", tmp.Name(), err)
	}
	name := filepath.Join(dir, strings.TrimPrefix(filepath.Base(tmp.Name()), "."))
	if err := os.Rename(tmp.Name(), name); err != nil {
		return "", fmt.Errorf("keep unsent output: %w", err)
	}
	return name, nil
}

// upload copies the temporary file to the object; its errors name it.
func (o *blobOutput) upload() error {
	b, release, err := o.c.get(o.ctx, o.n, o.name)
	if err != nil {
		return blobErr(o.name, err)
	}
	defer release()
	// Cancelling wctx before Close aborts the upload: nothing appears.
	wctx, cancel := context.WithCancel(o.ctx)
	defer cancel()
	w, err := b.NewWriter(wctx, o.n.key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return objectErr(o.ctx, b, o.name, o.n, err)
	}
	if _, err := io.Copy(w, o.f); err != nil {
		cancel()
		w.Close()
		return objectErr(o.ctx, b, o.name, o.n, err)
	}
	if err := w.Close(); err != nil {
		return objectErr(o.ctx, b, o.name, o.n, err)
	}
	return nil
}

func (o *blobOutput) Abort() error {
	if o.done {
		return nil
	}
	o.done = true
	return o.discard()
}

// discard closes the staged file and removes it if it still has a name.
func (o *blobOutput) discard() error {
	o.f.Close()
	if !o.named {
		return nil
	}
	if err := os.Remove(o.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove temporary output %q: %w", o.f.Name(), err)
	}
	return nil
}

// listDirs returns the folders (key prefixes) directly in dir, leaving
// out an empty element.
func (s blobStore) listDirs(ctx context.Context, dir string) ([]string, error) {
	n, b, release, err := s.openBlob(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer release()
	p := dirPrefix(n.key)
	var names []string
	it := b.List(&blob.ListOptions{Prefix: p, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, listErr(dir, n, err)
		}
		// A key another tool wrote with an empty element ("q//b") lists
		// as the prefix "q//": a folder named "", whose name would be q's
		// own (names make each run of "/" one), and which no name opens.
		if obj.IsDir && obj.Key != p+"/" {
			names = append(names, n.name(strings.TrimSuffix(obj.Key, "/")))
		}
	}
	slices.Sort(names)
	return names, nil
}

// remove deletes the object name; one not there is no error.
func (s blobStore) remove(ctx context.Context, name string) error {
	n, b, release, err := s.openBlob(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	if n.key == "" {
		return argErrorf(name, "names a whole bucket; name an object in it")
	}
	if err := b.Delete(ctx, n.key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return blobErr(name, err)
	}
	return nil
}

// removeAll deletes every object under the folder dir (the key prefix,
// at any depth). The objects are listed first and deleted after, so that
// a listing is never read while it changes under it.
func (s blobStore) removeAll(ctx context.Context, dir string) error {
	n, b, release, err := s.openBlob(ctx, dir)
	if err != nil {
		return err
	}
	defer release()
	if n.key == "" {
		return argErrorf(dir, "names a whole bucket; name a folder in it")
	}
	var keys []string
	it := b.List(&blob.ListOptions{Prefix: dirPrefix(n.key)})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return listErr(dir, n, err)
		}
		if !obj.IsDir {
			keys = append(keys, obj.Key)
		}
	}
	for _, k := range keys {
		// One gone already (another remover, a lifecycle rule) is what
		// was asked for.
		if err := b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return blobErr(n.name(k), err)
		}
	}
	return nil
}
