package fileset

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	_ "gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/hone-rl/hone/format/fileset/s3test"
)

// faultyS3 is an S3 server (gofakes3) over real HTTP, in front of which
// faults can be set: requests answered 503, response bodies cut off.
// It counts the object reads and the bytes they sent.
type faultyS3 struct {
	srv *s3test.Server

	mu        sync.Mutex
	fail      int           // the next fail requests of method failOn are answered 503
	failOn    string        // an HTTP method
	cut       int           // the next cut object reads stop after half their body
	delay     time.Duration // object reads wait this long before their first byte
	onGet     func()        // called (once, then cleared) before the next object read is served
	gets      int           // object reads (GET of a key) served
	sentBytes int64         // bytes of object bodies sent
	inFlight  int           // requests being served
	idle      sync.Cond     // signalled when inFlight drops to 0
	conns     int           // TCP connections accepted
	requests  int           // requests received, of any method
	heads     int           // HEAD requests received (an object's attributes)
}

func newFaultyS3(t *testing.T, buckets ...string) *faultyS3 {
	t.Helper()
	f := &faultyS3{}
	f.idle.L = &f.mu
	f.srv = s3test.Start(t, s3test.Options{Buckets: buckets, Wrap: f.wrap, ConnState: f.connState})
	// The client makes 3 attempts at a request, whatever AWS_MAX_ATTEMPTS
	// says: gocloud.dev builds its own retryer (aws.V2ConfigFromURLParams).
	return f
}

// wrap serves the fake h with the faults set, counting what it serves.
func (f *faultyS3) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.inFlight++
		f.requests++
		if r.Method == http.MethodHead {
			f.heads++
		}
		defer func() {
			f.mu.Lock()
			if f.inFlight--; f.inFlight == 0 {
				f.idle.Broadcast()
			}
			f.mu.Unlock()
		}()
		if f.fail > 0 && r.Method == f.failOn {
			f.fail--
			f.mu.Unlock()
			http.Error(w, "slow down", http.StatusServiceUnavailable)
			return
		}
		object := r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1
		cut := false
		delay := f.delay
		if object {
			f.gets++
			if f.cut > 0 {
				f.cut--
				cut = true
			}
		}
		onGet := f.onGet
		if object {
			f.onGet = nil
		}
		f.mu.Unlock()
		if !object {
			h.ServeHTTP(w, r)
			return
		}
		if onGet != nil {
			onGet()
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		cw := &countingWriter{ResponseWriter: w, f: f, cut: cut}
		h.ServeHTTP(cw, r)
	})
}

// connState counts the TCP connections accepted.
func (f *faultyS3) connState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		f.mu.Lock()
		f.conns++
		f.mu.Unlock()
	}
}

// url names key in bucket on this server.
func (f *faultyS3) url(bucket, key string) string { return f.srv.URL(bucket, key) }

func (f *faultyS3) set(fn func(f *faultyS3)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// counts returns the object reads and body bytes served so far, once no
// request is being served (a client can have a whole body before the
// handler has counted its last write).
func (f *faultyS3) counts() (gets int, sent int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.inFlight > 0 {
		f.idle.Wait()
	}
	return f.gets, f.sentBytes
}

// countingWriter counts the body bytes sent; with cut it sends half of the
// declared body and then drops the connection.
type countingWriter struct {
	http.ResponseWriter
	f    *faultyS3
	cut  bool
	sent int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.cut {
		if n, err := strconv.ParseInt(c.Header().Get("Content-Length"), 10, 64); err == nil && c.sent+int64(len(p)) > n/2 {
			p = p[:n/2-c.sent]
			c.ResponseWriter.Write(p)
			c.ResponseWriter.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the server closes the connection mid-body
		}
	}
	n, err := c.ResponseWriter.Write(p)
	c.sent += int64(n)
	c.f.mu.Lock()
	c.f.sentBytes += int64(n)
	c.f.mu.Unlock()
	return n, err
}

func putObject(t *testing.T, name string, data []byte) {
	t.Helper()
	out, err := Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Abort()
	if _, err := out.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
}

func readObject(t *testing.T, name string) []byte {
	t.Helper()
	f, err := Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The input rule over S3: an object, a folder (its objects directly in it,
// by extension, without hidden names), a glob, a missing name; names keep
// the URL's query so each opens as it is.
func TestS3Resolve(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	for _, k := range []string{"r/b.parquet", "r/a.parquet", "r/.a.parquet.tmp-1", "r/notes.txt", "r/sub/c.parquet", "round[1].parquet"} {
		putObject(t, s3.url("bkt", k), []byte(k))
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{s3.url("bkt", "r")}, []string{"r/a.parquet", "r/b.parquet"}},
		{[]string{s3.url("bkt", "r/")}, []string{"r/a.parquet", "r/b.parquet"}},
		{[]string{s3.url("bkt", "r/b*.parquet"), s3.url("bkt", "r/*.parquet")}, []string{"r/b.parquet", "r/a.parquet"}},
		{[]string{s3.url("bkt", "round[1].parquet")}, []string{"round[1].parquet"}}, // literal first
		{[]string{s3.url("bkt", "r/sub/c.parquet")}, []string{"r/sub/c.parquet"}},
	} {
		set, err := Resolve(ctx, tc.args, Options{})
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		var want []string
		for _, k := range tc.want {
			want = append(want, s3.url("bkt", k))
		}
		if got := set.Names(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%q: got %q, want %q", tc.args, got, want)
		}
		for i := range set.Len() {
			f, err := set.Open(ctx, i)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(f.Reader())
			f.Close()
			if k := strings.TrimPrefix(strings.Split(set.Name(i), "?")[0], "s3://bkt/"); string(b) != k {
				t.Errorf("%s holds %q", set.Name(i), b)
			}
		}
	}
	for _, tc := range []struct{ arg, mention string }{
		{s3.url("bkt", "r/missing.parquet"), "no such file"},
		{s3.url("bkt", "r/*.nope"), "glob matches no files"},
		{s3.url("bkt", "r/sub/*/c.parquet"), "only in the last element"},
		{s3.url("bkt", "empty/"), "no such file"},
		// "?" begins the query: the glob the docs once promised is
		// refused with the reason (was: unknown query parameter ".parquet").
		{s3.url("bkt", "r/?.parquet"), "not ?"},
		{"s3://bkt/r/?.parquet", "write a \"?\" in a key as %3F"},
		{"s3:///key.parquet", "no bucket"},
	} {
		_, err := Resolve(ctx, []string{tc.arg}, Options{})
		if !errors.Is(err, ErrBadArgument) || !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), strings.Split(tc.arg, "?")[0]) {
			t.Errorf("%s: %v; want a bad argument naming it, saying %q", tc.arg, err, tc.mention)
		}
	}
	if _, err := Open(ctx, s3.url("nobucket", "a.parquet")); err == nil || !strings.Contains(err.Error(), "s3://nobucket/a.parquet") {
		t.Errorf("a missing bucket: %v; want an error naming the URL", err)
	}
	if _, err := Open(ctx, s3.url("bkt", "r/missing.parquet")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing object: %v; want fs.ErrNotExist", err)
	}
}

// Random access reads fetch ReadAhead bytes per request: reading a 3 MiB
// object in 4 KiB pieces takes 4 requests after the footer's, and no byte
// is fetched twice; a small read near the end fetches the last ReadAround
// bytes (a footer and its length in one request).
func TestS3ReadAhead(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	data := make([]byte, 3<<20+123)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	name := s3.url("bkt", "big.bin")
	putObject(t, name, data)

	f, err := Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size != int64(len(data)) {
		t.Fatalf("size %d, want %d", f.Size, len(data))
	}
	g0, s0 := s3.counts()
	tail := make([]byte, 8)
	if _, err := f.ReadAt(tail, f.Size-8); err != nil || !bytes.Equal(tail, data[len(data)-8:]) {
		t.Fatalf("footer read: %v", err)
	}
	footer := make([]byte, 1000)
	if _, err := f.ReadAt(footer, f.Size-1008); err != nil || !bytes.Equal(footer, data[len(data)-1008:len(data)-8]) {
		t.Fatalf("footer read: %v", err)
	}
	g1, s1 := s3.counts()
	if g1-g0 != 1 || s1-s0 != ReadAround {
		t.Errorf("an 8-byte read at the end, then 1000 bytes before it: %d requests, %d bytes; want 1 and %d", g1-g0, s1-s0, ReadAround)
	}
	got := make([]byte, 0, len(data))
	piece := make([]byte, 4096)
	for off := int64(0); off < f.Size; off += int64(len(piece)) {
		n, err := f.ReadAt(piece, off)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		got = append(got, piece[:n]...)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	g2, s2 := s3.counts()
	// HeadWindow, then ReadAhead windows up to the footer's bytes.
	if want := int64(len(data)) - ReadAround; g2-g1 != 4 || s2-s1 != want {
		t.Errorf("reading %d bytes in 4 KiB pieces: %d requests, %d bytes; want 4 (ReadAhead %d) and %d", len(data), g2-g1, s2-s1, ReadAhead, want)
	}
	// A read larger than ReadAhead goes straight to the caller.
	big := make([]byte, 2<<20)
	if n, err := f.ReadAt(big, 100); err != nil || n != len(big) || !bytes.Equal(big, data[100:100+len(big)]) {
		t.Fatalf("large read: n=%d err=%v", n, err)
	}
	// Past the end: io.EOF with what there is.
	n, err := f.ReadAt(piece, f.Size-10)
	if n != 10 || err != io.EOF {
		t.Errorf("read across the end: n=%d err=%v; want 10, io.EOF", n, err)
	}
}

// A connection dropped mid-body is asked again from where it broke; one
// that always breaks ends in an error naming the URL.
func TestS3DroppedConnection(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	data := bytes.Repeat([]byte("0123456789abcdef"), 10000)
	name := s3.url("bkt", "x.bin")
	putObject(t, name, data)

	s3.set(func(f *faultyS3) { f.cut = 2 })
	if got := readObject(t, name); !bytes.Equal(got, data) {
		t.Fatalf("read after two dropped connections differs (%d bytes)", len(got))
	}
	s3.set(func(f *faultyS3) { f.cut = 100 })
	f, err := Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = io.ReadAll(f.Reader())
	if err == nil || !strings.Contains(err.Error(), "s3://bkt/x.bin") || !strings.Contains(err.Error(), "broke 4 times") {
		t.Errorf("always-dropped connection: %v; want an error naming the URL", err)
	}
}

// An output appears only on Commit, whole; Abort leaves nothing; a store
// answering 503 a few times is retried. A failed upload is
// TestS3FailedUploadKeepsData's.
func TestS3AtomicOutput(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	name := s3.url("bkt", "out/a.parquet")

	out, err := Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	out.Write([]byte("first"))
	if _, err := Open(ctx, name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("before Commit: %v; want not found", err)
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readObject(t, name); string(got) != "first" {
		t.Errorf("after Commit: %q", got)
	}

	out, _ = Create(ctx, name)
	out.Write([]byte("second"))
	out.Abort()
	if got := readObject(t, name); string(got) != "first" {
		t.Errorf("after Abort: %q; want the old object", got)
	}

	s3.set(func(f *faultyS3) { f.fail, f.failOn = 1, http.MethodPut })
	putObject(t, name, []byte("third"))
	if got := readObject(t, name); string(got) != "third" {
		t.Errorf("after a 503: %q", got)
	}

	if _, err := Create(ctx, s3.url("bkt", "out/")); !errors.Is(err, ErrBadArgument) {
		t.Errorf("output naming a folder: %v", err)
	}
}

func TestJoinAndListDirs(t *testing.T) {
	for _, tc := range []struct{ dir, want string }{
		{"runs", filepath.Join("runs", "r1", "latest")},
		{"s3://b/runs?region=x", "s3://b/runs/r1/latest?region=x"},
		{"s3://b/runs/", "s3://b/runs/r1/latest"},
		{"file:///tmp/runs", "file:///tmp/runs/r1/latest"},
	} {
		if got := Join(tc.dir, "r1", "latest"); got != tc.want {
			t.Errorf("Join(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
	if got := Join("s3://b/r?region=x", "50% #1?.txt"); got != "s3://b/r/50%25 %231%3F.txt?region=x" || Base(got) != "50% #1?.txt" {
		t.Errorf("Join of a name with URL characters = %q, its Base %q", got, Base(got))
	}
	if IsURL("runs") || IsURL("file:///x") || !IsURL("gs://b/x") {
		t.Error("IsURL")
	}
	s3 := newFaultyS3(t, "bkt")
	for _, k := range []string{"a/r1/latest", "a/r2/step-1/x", "a/.hidden/x", "a/file"} {
		putObject(t, s3.url("bkt", k), []byte("x"))
	}
	got, err := ListDirs(context.Background(), s3.url("bkt", "a"))
	if want := []string{s3.url("bkt", "a/r1"), s3.url("bkt", "a/r2")}; err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ListDirs: %q, %v; want %q", got, err, want)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "r1"), 0o755)
	os.Mkdir(filepath.Join(dir, ".tmp"), 0o755)
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if got, err := ListDirs(context.Background(), dir); err != nil || len(got) != 1 || got[0] != filepath.Join(dir, "r1") {
		t.Errorf("local ListDirs: %q, %v", got, err)
	}
}

// A store slow to send its first byte is waited for; cancelling the
// context ends the wait at once, with an error naming the URL.
func TestS3SlowFirstByte(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	name := s3.url("bkt", "slow.bin")
	putObject(t, name, []byte("worth the wait"))
	s3.set(func(f *faultyS3) { f.delay = 300 * time.Millisecond })
	if got := readObject(t, name); string(got) != "worth the wait" {
		t.Errorf("read %q", got)
	}
	s3.set(func(f *faultyS3) { f.delay = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	f, err := Open(ctx, name) // HEAD is not delayed
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = f.ReadAt(make([]byte, 4), 0)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "s3://bkt/slow.bin") {
		t.Errorf("read cancelled while waiting: %v; want context.Canceled naming the URL", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v to be heard", d)
	}
}

// A range announced by WillRead is fetched in one request when first read;
// reads inside it fetch nothing past it, and a read before it stops at its
// start, so each byte comes once.
func TestS3WillRead(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	data := make([]byte, 4<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	name := s3.url("bkt", "chunks.bin")
	putObject(t, name, data)
	f, err := Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	read := func(off, n int64) {
		t.Helper()
		p := make([]byte, n)
		if _, err := f.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+n]) {
			t.Fatalf("read %d+%d: %v", off, n, err)
		}
	}
	g0, s0 := s3.counts()
	// A 100 KiB "column chunk" at 1 MiB read in 4 KiB pieces: one request,
	// its bytes only.
	f.WillRead(1<<20, 100<<10)
	for off := int64(1 << 20); off < 1<<20+100<<10; off += 4096 {
		read(off, 4096)
	}
	g1, s1 := s3.counts()
	if g1-g0 != 1 || s1-s0 != 100<<10 {
		t.Errorf("an announced 100 KiB range: %d requests, %d bytes; want 1 and %d", g1-g0, s1-s0, 100<<10)
	}
	// An in-order read just before an announced range stops at its start;
	// the range then fetches only what is not held.
	f.WillRead(3<<20, 512<<10)
	read(3<<20-8192, 4096)
	read(3<<20-4096, 4096)
	read(3<<20, 512<<10)
	g2, s2 := s3.counts()
	if want := int64(8192 + 512<<10); s2-s1 != want || g2-g1 > 3 {
		t.Errorf("reads up to and into an announced range: %d requests, %d bytes; want at most 3 and %d", g2-g1, s2-s1, want)
	}
	// Announcing the next range lets the last one go: reading it again
	// fetches it again.
	f.WillRead(2<<20, 4096)
	read(2<<20, 4096)
	g3, s3b := s3.counts()
	read(3<<20, 4096)
	if g4, s4 := s3.counts(); g4-g3 != 1 || s4-s3b != ReadAround {
		t.Errorf("a range announced before the last one: %d requests, %d bytes; want it fetched again (1 request, %d bytes)", g4-g3, s4-s3b, ReadAround)
	}
	// A local file takes the call and ignores it.
	path := filepath.Join(t.TempDir(), "x.bin")
	os.WriteFile(path, data[:100], 0o644)
	lf, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	lf.WillRead(0, 100)
	lf.Close()
}

// An object whose key holds "%", "#" or "?" is listed under a name that
// opens it again: those characters are escaped in the URL. Before, a
// folder holding "50%.parquet" resolved to a name that was no URL ("invalid
// URL escape"), and one holding "a#1.parquet" to a name with a fragment.
func TestS3KeysWithURLCharacters(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	keys := map[string]string{ // key -> its name in a URL
		"d/50%.parquet":   "d/50%25.parquet",
		"d/a#1.parquet":   "d/a%231.parquet",
		"d/b?.parquet":    "d/b%3F.parquet",
		"d/my c.parquet":  "d/my c.parquet",
		"e/x%y/z.parquet": "e/x%25y/z.parquet",
	}
	for k, escaped := range keys {
		putObject(t, s3.url("bkt", escaped), []byte(k))
	}
	set, err := Resolve(ctx, []string{s3.url("bkt", "d/"), s3.url("bkt", "d/*.parquet")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 4 {
		t.Errorf("resolved %q; want the 4 objects of d/", set.Names())
	}
	for i := range set.Len() {
		f, err := set.Open(ctx, i)
		if err != nil {
			t.Errorf("open %s: %v", set.Name(i), err)
			continue
		}
		b, _ := io.ReadAll(f.Reader())
		f.Close()
		if want := strings.TrimPrefix(strings.Split(set.Name(i), "?endpoint")[0], "s3://bkt/"); keys[string(b)] != want {
			t.Errorf("%s holds %q", set.Name(i), b)
		}
	}
	dirs, err := ListDirs(ctx, s3.url("bkt", "e"))
	if err != nil || len(dirs) != 1 || dirs[0] != s3.url("bkt", "e/x%25y") {
		t.Fatalf("ListDirs: %q, %v", dirs, err)
	}
	if _, err := Resolve(ctx, []string{dirs[0]}, Options{}); err != nil {
		t.Errorf("resolve a listed folder: %v", err)
	}
}

// An object replaced between its Open and a read (a run's metrics.jsonl,
// published again at each step) is read whole, old or new, never a mix:
// before, ReadFile took the size at Open and then read that many bytes of
// the new object, a cut-off prefix of it, and a ranged read of an open
// object returned the new object's bytes as the old one's.
func TestS3ObjectReplacedWhileRead(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	name := s3.url("bkt", "r/metrics.jsonl")
	const old, next = "{\"step\":1}\n", "{\"step\":1,\"x\":2}\n{\"step\":2}\n"
	putObject(t, name, []byte(old))
	replace := func() { putObject(t, name, []byte(next)) }
	s3.set(func(f *faultyS3) { f.onGet = replace })
	b, err := ReadFile(ctx, name)
	if err != nil || (string(b) != old && string(b) != next) {
		t.Errorf("ReadFile of an object replaced while read: %q, %v; want %q or %q", b, err, old, next)
	}

	putObject(t, name, []byte(old))
	f, err := Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s3.set(func(f *faultyS3) { f.onGet = replace })
	p := make([]byte, f.Size)
	if n, err := f.ReadAt(p, 0); err == nil || !strings.Contains(err.Error(), DisplayName(name)) {
		t.Errorf("a read of an object replaced since Open gave %q, %v; want an error naming %s", p[:n], err, DisplayName(name))
	}
}

// A folder made as the AWS console, MinIO's console, s3fs or rclone make
// one holds an empty object named for it ("m/"), the folder marker. It
// is the folder, not a file in it. Before, a glob over the folder
// ("m/*") and List (which Pull copies a run folder by) returned the
// marker as a file, whose name ends in "/" and so does not open: the
// glob's input failed at Open ("names a folder"), and so did every Pull
// of a run folder made in the console.
func TestS3FolderMarkers(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, strings.Replace(s3.url("bkt", ""), "/?", "?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, k := range []string{"m/", "m/sub/"} {
		if err := b.WriteAll(ctx, k, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	putObject(t, s3.url("bkt", "m/a.parquet"), []byte("a"))
	putObject(t, s3.url("bkt", "m/sub/b.parquet"), []byte("b"))
	want := s3.url("bkt", "m/a.parquet")
	set, err := Resolve(ctx, []string{s3.url("bkt", "m/*")}, Options{})
	if err != nil || strings.Join(set.Names(), " ") != want {
		t.Errorf("glob over a folder with its marker: %q, %v; want %q", set.Names(), err, want)
	}
	for _, dir := range []string{s3.url("bkt", "m"), s3.url("bkt", "m/")} {
		got, err := List(ctx, dir, "")
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("List(%s): %q, %v; want %q", dir, got, err, want)
		}
	}
	dirs, err := ListDirs(ctx, s3.url("bkt", "m"))
	if err != nil || strings.Join(dirs, " ") != s3.url("bkt", "m/sub") {
		t.Errorf("ListDirs: %q, %v", dirs, err)
	}
}

// secondsStore is an object store of one object whose Attributes give its
// modification time to the millisecond and whose reads give it in whole
// seconds, as GCS's do through gcsblob (Attributes from the JSON API's
// "updated", reads from the XML API's Last-Modified header). Methods not
// used here are the nil embedded interface's.
type secondsStore struct{ driver.Bucket }

const secondsData = "an object read in ranges"

// secondsMod is the object's modification time, with a fraction of a
// second, as GCS's times have.
func secondsMod() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 678_000_000, time.UTC) }

func (secondsStore) Attributes(context.Context, string) (*driver.Attributes, error) {
	return &driver.Attributes{Size: int64(len(secondsData)), ModTime: secondsMod()}, nil
}

func (secondsStore) NewRangeReader(_ context.Context, _ string, off, n int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	end := int64(len(secondsData))
	if n >= 0 && off+n < end {
		end = off + n
	}
	return &secondsReader{Reader: strings.NewReader(secondsData[off:end])}, nil
}

func (secondsStore) ErrorCode(error) gcerrors.ErrorCode { return gcerrors.Unknown }
func (secondsStore) As(any) bool                        { return false }
func (secondsStore) ErrorAs(error, any) bool            { return false }
func (secondsStore) Close() error                       { return nil }

type secondsReader struct{ *strings.Reader }

func (*secondsReader) Close() error { return nil }
func (*secondsReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{Size: int64(len(secondsData)), ModTime: secondsMod().Truncate(time.Second)}
}
func (*secondsReader) As(any) bool { return false }
func (r *secondsReader) Download(w io.Writer) error {
	_, err := io.Copy(w, r.Reader)
	return err
}

type secondsOpener struct{}

func (secondsOpener) OpenBucketURL(context.Context, *url.URL) (*blob.Bucket, error) {
	return blob.NewBucket(secondsStore{}), nil
}

// An object of a store that gives its modification time in whole seconds
// to a read and to the millisecond at Open (gs://) is read. Before, every
// ranged read compared the two exactly, took the object for replaced
// since it was opened, and failed: no gs:// object could be read.
func TestReadWithModTimeInSeconds(t *testing.T) {
	const scheme = "honesecondstest"
	if mux := blob.DefaultURLMux(); !mux.ValidBucketScheme(scheme) {
		mux.RegisterBucket(scheme, secondsOpener{})
	}
	b, err := ReadFile(context.Background(), scheme+"://bkt/obj")
	if err != nil || string(b) != secondsData {
		t.Fatalf("read %q, %v; want %q", b, err, secondsData)
	}
}

// connections returns how many TCP connections the server accepted so far.
func (f *faultyS3) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// A resolved set reads its objects over shared connections: resolving a
// folder of 50 objects and reading each takes one or two, not one (or
// two) per object as when every Open opened its own bucket, each with its
// own HTTP client (52 connections here before).
func TestS3SetReusesConnections(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	const files = 50
	for i := range files {
		putObject(t, s3.url("bkt", "in/"+strconv.Itoa(100+i)+".parquet"), []byte(strconv.Itoa(i)))
	}
	before := s3.connections()
	set, err := Resolve(ctx, []string{s3.url("bkt", "in/")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Len() != files {
		t.Fatalf("resolved %d objects, want %d", set.Len(), files)
	}
	for i := range set.Len() {
		f, err := set.Open(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f.Reader())
		f.Close()
		if err != nil || string(b) != strconv.Itoa(i) {
			t.Fatalf("%s: %q, %v", set.Name(i), b, err)
		}
	}
	if n := s3.connections() - before; n > 2 {
		t.Errorf("resolving and reading %d objects took %d connections, want at most 2: the set's files do not share a bucket", files, n)
	}
}

// A set's shared bucket outlives what opened it: a File open when the set
// is closed reads on, Open works after Close, and a bucket opened under
// Resolve's context serves reads after that context is cancelled.
func TestS3SetBucketLifetime(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	for _, k := range []string{"in/a.parquet", "in/b.parquet"} {
		putObject(t, s3.url("bkt", k), []byte(k))
	}
	rctx, cancel := context.WithCancel(context.Background())
	set, err := Resolve(rctx, []string{s3.url("bkt", "in/")}, Options{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f, err := set.Open(ctx, 0)
	if err != nil {
		t.Fatalf("open after Resolve's context ended: %v", err)
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f.Reader()); err != nil || string(b) != "in/a.parquet" {
		t.Errorf("a file open when its set closed reads %q, %v", b, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	g, err := set.Open(ctx, 1)
	if err != nil {
		t.Fatalf("open after the set's Close: %v", err)
	}
	defer g.Close()
	if b, err := io.ReadAll(g.Reader()); err != nil || string(b) != "in/b.parquet" {
		t.Errorf("a file opened after its set closed reads %q, %v", b, err)
	}
}

// A watched folder (ListSet) is listed, statted and read over one bucket:
// hone-train --watch-dir stats every object of its folder on each call,
// and opened a bucket, a new connection, for each read. Info gives an
// object's size, last-modified time and ETag, which changes with the
// contents.
func TestS3ListSetSharesABucket(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	const files = 50
	for i := range files {
		putObject(t, s3.url("bkt", "in/"+strconv.Itoa(100+i)+".parquet"), []byte(strconv.Itoa(i)))
	}
	before := s3.connections()
	set, err := ListSet(ctx, s3.url("bkt", "in/"), ".parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Len() != files {
		t.Fatalf("listed %d objects, want %d", set.Len(), files)
	}
	etags := map[string]bool{}
	for i := range set.Len() {
		fi, err := set.Info(ctx, i)
		if err != nil || fi.Size != int64(len(strconv.Itoa(i))) || fi.ModTime.IsZero() || fi.ETag == "" {
			t.Fatalf("%s: info %+v, %v; want its size, time and ETag", set.Name(i), fi, err)
		}
		etags[fi.ETag] = true
		b, err := set.ReadFile(ctx, i)
		if err != nil || string(b) != strconv.Itoa(i) {
			t.Fatalf("%s: %q, %v", set.Name(i), b, err)
		}
	}
	if len(etags) != files {
		t.Errorf("%d ETags for %d objects of other contents", len(etags), files)
	}
	if n := s3.connections() - before; n > 2 {
		t.Errorf("listing, statting and reading %d objects took %d connections, want at most 2: they do not share a bucket", files, n)
	}
}

// A Pool's reads and writes of single objects share one bucket: the judge
// cache writes and reads an object per judged group, and each WriteFile
// and ReadFile opened a bucket, a new connection, of its own (about one
// connection a call before: 60 here). The writes are whole and atomic, as
// WriteFile's.
func TestS3PoolSharesABucket(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	const files = 30
	before := s3.connections()
	pool := NewPool()
	for i := range files {
		if err := pool.WriteFile(ctx, s3.url("bkt", "cache/"+strconv.Itoa(i)+".json"), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range files {
		b, err := pool.ReadFile(ctx, s3.url("bkt", "cache/"+strconv.Itoa(i)+".json"))
		if err != nil || string(b) != strconv.Itoa(i) {
			t.Fatalf("object %d: %q, %v", i, b, err)
		}
	}
	if n := s3.connections() - before; n > 2 {
		t.Errorf("writing and reading %d objects took %d connections, want at most 2: they do not share a bucket", files, n)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close each call opens a bucket of its own, as the functions do.
	if b, err := pool.ReadFile(ctx, s3.url("bkt", "cache/0.json")); err != nil || string(b) != "0" {
		t.Fatalf("read after Close: %q, %v", b, err)
	}
}

// An input in a bucket the store does not have (a typo, a bucket not made
// yet) says that the bucket does not exist, naming it; it said only "no
// such file or directory", as for a missing object in a bucket that is
// there. A listing (ListDirs, List) says so too. It is still a bad
// argument and not-exist.
func TestS3MissingBucketNamed(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	for _, name := range []string{s3.url("nobkt", "x.parquet"), s3.url("nobkt", "d/")} {
		_, err := Resolve(ctx, []string{name}, Options{})
		if err == nil || !strings.Contains(err.Error(), "bucket s3://nobkt/ does not exist") || !strings.Contains(err.Error(), name) {
			t.Errorf("Resolve(%s): %v; want that the bucket s3://nobkt/ does not exist, naming the input", name, err)
		}
		if !errors.Is(err, ErrBadArgument) || !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrNoBucket) {
			t.Errorf("Resolve(%s): %v does not match ErrBadArgument, fs.ErrNotExist and ErrNoBucket", name, err)
		}
	}
	if _, err := ListDirs(ctx, s3.url("nobkt", "runs")); !errors.Is(err, ErrNoBucket) || !strings.Contains(err.Error(), "bucket s3://nobkt/ does not exist") {
		t.Errorf("ListDirs in a missing bucket: %v", err)
	}
	if _, err := List(ctx, s3.url("nobkt", "runs"), ".parquet"); !errors.Is(err, ErrNoBucket) {
		t.Errorf("List in a missing bucket: %v", err)
	}
	// A missing object in a bucket that is there is no missing bucket.
	if _, err := Resolve(ctx, []string{s3.url("bkt", "x.parquet")}, Options{}); !errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "no such file") || errors.Is(err, ErrNoBucket) {
		t.Errorf("a missing object in a bucket that exists: %v", err)
	}
}

// An object named alone (Open, StatFile, ReadFile, WriteFile), not
// resolved as an input, in a bucket the store does not have says that the
// bucket does not exist, naming it: it said "file does not exist", as for
// a missing object in a bucket that is there, and a hone-serve --model
// or a judge cache in a misspelt bucket sent the user looking for the
// object.
func TestS3MissingBucketOfOneObject(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	name := s3.url("nobkt", "d/x.parquet")
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNoBucket) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "bucket s3://nobkt/ does not exist") || !strings.Contains(err.Error(), "s3://nobkt/d/x.parquet") {
			t.Errorf("%s: %v; want that the bucket s3://nobkt/ does not exist, naming the object, matching ErrNoBucket and fs.ErrNotExist", what, err)
		}
	}
	_, err := Open(ctx, name)
	check("Open", err)
	_, err = StatFile(ctx, name)
	check("StatFile", err)
	_, err = ReadFile(ctx, name)
	check("ReadFile", err)
	check("WriteFile", WriteFile(ctx, name, []byte("x")))
	// A missing object in a bucket that is there is no missing bucket.
	if _, err := Open(ctx, s3.url("bkt", "x.parquet")); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoBucket) {
		t.Errorf("a missing object in a bucket that exists: %v", err)
	}
}

// Slashes doubled in an object-store URL (s3://b/p//, s3://b//p/x, a
// folder flag given with a trailing "/" that a name was then joined to)
// name the same keys as single ones: they made keys with an empty
// element ("p//x.parquet", "/p/x"), which a listing of the folder p never
// shows, so an output written there was never read back.
func TestS3SlashesNormalised(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	putObject(t, s3.url("bkt", "p/a.parquet"), []byte("a"))
	want := s3.url("bkt", "p/a.parquet")
	for _, args := range [][]string{
		{s3.url("bkt", "p//")},
		{s3.url("bkt", "/p/")},
		{s3.url("bkt", "p//a.parquet")},
		{s3.url("bkt", "//p/a.parquet")},
		// one object named twice, however spelt, is read once
		{s3.url("bkt", "p/"), s3.url("bkt", "p//a.parquet")},
	} {
		set, err := Resolve(ctx, args, Options{})
		if err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if got := set.Names(); len(got) != 1 {
			t.Errorf("%q: got %q, want the one object %s", args, got, want)
		} else if b, err := set.ReadFile(ctx, 0); err != nil || string(b) != "a" {
			t.Errorf("%q: read %q, %v; want the object %s", args, b, err, want)
		}
		set.Close()
	}
	// Written under a folder given with a trailing "/" (or two), the
	// object is in that folder's listing.
	putObject(t, Join(s3.url("bkt", "out//"), "b.parquet"), []byte("b"))
	putObject(t, s3.url("bkt", "out///c.parquet"), []byte("c"))
	got, err := List(ctx, s3.url("bkt", "out"), ".parquet")
	if want := []string{s3.url("bkt", "out/b.parquet"), s3.url("bkt", "out/c.parquet")}; err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("List(out): %q, %v; want %q", got, err, want)
	}
	if got := Join(s3.url("bkt", "out//"), "b.parquet"); got != s3.url("bkt", "out/b.parquet") {
		t.Errorf("Join of a folder ending in //: %s", got)
	}
}

// requestCounts returns the requests and HEAD requests received so far,
// once no request is being served.
func (f *faultyS3) requestCounts() (requests, heads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.inFlight > 0 {
		f.idle.Wait()
	}
	return f.requests, f.heads
}

// An object opened from a listing (a folder resolved, ListSet, a glob)
// takes its size and time from the listing, which gave them already: one
// request to read a small object, not a HEAD (Attributes) before it, so
// reading a folder of N objects makes N fewer requests. An object named
// alone, with no listing before, is still asked after (HEAD), and so is
// one opened a second time from its set: a listing is a snapshot, used
// once.
func TestS3ListedOpenSkipsHead(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	const files = 20
	for i := range files {
		putObject(t, s3.url("bkt", "in/"+strconv.Itoa(100+i)+".parquet"), []byte(strconv.Itoa(i)))
	}
	readAll := func(set *Set) {
		t.Helper()
		for i := range set.Len() {
			f, err := set.Open(ctx, i)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f.Reader())
			f.Close()
			if err != nil || string(b) != strconv.Itoa(i) {
				t.Fatalf("%s: %q, %v", set.Name(i), b, err)
			}
		}
	}
	for _, how := range []struct {
		name string
		set  func() (*Set, error)
	}{
		{"Resolve of a folder", func() (*Set, error) { return Resolve(ctx, []string{s3.url("bkt", "in/")}, Options{}) }},
		{"Resolve of a glob", func() (*Set, error) { return Resolve(ctx, []string{s3.url("bkt", "in/1*.parquet")}, Options{}) }},
		{"ListSet", func() (*Set, error) { return ListSet(ctx, s3.url("bkt", "in/"), ".parquet") }},
	} {
		set, err := how.set()
		if err != nil {
			t.Fatal(err)
		}
		if set.Len() != files {
			t.Fatalf("%s: %d objects, want %d", how.name, set.Len(), files)
		}
		req0, head0 := s3.requestCounts()
		readAll(set)
		req1, head1 := s3.requestCounts()
		if req1-req0 != files || head1 != head0 {
			t.Errorf("%s: reading %d listed objects made %d requests (%d HEAD), want %d (none HEAD): the listing gave their sizes", how.name, files, req1-req0, head1-head0, files)
		}
		readAll(set)
		req2, head2 := s3.requestCounts()
		if req2-req1 != 2*files || head2-head1 != files {
			t.Errorf("%s: reading them again made %d requests (%d HEAD), want %d (%d HEAD): a listing serves one Open", how.name, req2-req1, head2-head1, 2*files, files)
		}
		set.Close()
	}
	req0, head0 := s3.requestCounts()
	if b := readObject(t, s3.url("bkt", "in/100.parquet")); string(b) != "0" {
		t.Fatalf("read %q", b)
	}
	if req, head := s3.requestCounts(); req-req0 != 2 || head-head0 != 1 {
		t.Errorf("opening and reading an object named alone made %d requests (%d HEAD), want 2 (1 HEAD)", req-req0, head-head0)
	}
}

// An object replaced between its listing and its Open is not read as the
// listing gave it: the read says that it was replaced since it was listed
// (its bytes are another size now), and opening it again reads it as it
// is; ReadFile, which opens it again itself, reads the new contents.
func TestS3ListedObjectReplaced(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	name := s3.url("bkt", "in/a.parquet")
	putObject(t, name, []byte("old"))
	set, err := ListSet(ctx, s3.url("bkt", "in/"), ".parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	putObject(t, name, []byte("newer bytes"))
	f, err := set.Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f.Reader())
	f.Close()
	if !errors.Is(err, errChanged) || !strings.Contains(err.Error(), "since it was listed") {
		t.Errorf("read of an object replaced since its listing: %q, %v; want an error saying it was replaced since it was listed", b, err)
	}
	f, err = set.Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(f.Reader())
	f.Close()
	if err != nil || string(b) != "newer bytes" {
		t.Errorf("opened again: %q, %v; want the new contents", b, err)
	}

	putObject(t, name, []byte("old"))
	set2, err := ListSet(ctx, s3.url("bkt", "in/"), ".parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer set2.Close()
	putObject(t, name, []byte("newer bytes"))
	if b, err := set2.ReadFile(ctx, 0); err != nil || string(b) != "newer bytes" {
		t.Errorf("ReadFile of an object replaced since its listing: %q, %v; want the new contents", b, err)
	}
}

// Errors about an object name it as the user does, without the bucket
// query (endpoint=…&use_path_style=…): a write to a missing bucket, a
// write after Commit, a read of an object replaced since it was opened,
// a missing object. They printed the whole URL, query and all.
func TestS3ErrorsNameObjectWithoutQuery(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "endpoint=") {
			t.Errorf("%s: %v; want an error naming %s without the bucket query", what, err, want)
		}
	}
	check("WriteFile to a missing bucket", WriteFile(ctx, s3.url("nobkt", "d/x.parquet"), []byte("x")), "s3://nobkt/d/x.parquet")

	out, err := Create(ctx, s3.url("bkt", "d/y.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = out.Write([]byte("late"))
	check("Write after Commit", err, "s3://bkt/d/y.parquet")
	check("Commit twice", out.Commit(), "s3://bkt/d/y.parquet")

	_, err = Open(ctx, s3.url("bkt", "d/none.parquet"))
	check("Open of a missing object", err, "s3://bkt/d/none.parquet")

	putObject(t, s3.url("bkt", "d/z.parquet"), []byte("first"))
	f, err := Open(ctx, s3.url("bkt", "d/z.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	putObject(t, s3.url("bkt", "d/z.parquet"), []byte("second, longer"))
	_, err = f.ReadAt(make([]byte, 2), 0)
	check("read of a replaced object", err, "s3://bkt/d/z.parquet")
}
