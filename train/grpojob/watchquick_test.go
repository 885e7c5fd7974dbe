package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3/backend/s3mem"

	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
	"github.com/hone-rl/hone/format/fileset/s3test"
	"github.com/hone-rl/hone/train/checkpoint"
)

// objectGets is a fake S3 (gofakes3) whose objects all bear one fixed
// last-modified time, long past (so no stat of theirs is racy), and which
// counts the GETs of each object under incoming/ (reads; listings are
// GETs of the bucket and are not counted).
type objectGets struct {
	be     *s3mem.Backend
	query  string
	mu     sync.Mutex
	counts map[string]int
	// before, when set, sees each request before the server answers it
	// (a test's stand-in for another process acting at that moment).
	before func(r *http.Request)
}

// objectsModified is the last-modified time of every object of
// objectGets, to the second as S3 gives it.
var objectsModified = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func startObjectGets(t testing.TB, bucket string) *objectGets {
	t.Helper()
	s := &objectGets{counts: map[string]int{}}
	srv := s3test.Start(t, s3test.Options{Buckets: []string{bucket}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if key, ok := strings.CutPrefix(r.URL.Path, "/"+bucket+"/incoming/"); ok && key != "" && r.Method == http.MethodGet {
				s.mu.Lock()
				s.counts[key]++
				s.mu.Unlock()
			}
			s.mu.Lock()
			before := s.before
			s.mu.Unlock()
			if before != nil {
				before(r)
			}
			h.ServeHTTP(w, r)
		})
	}})
	s.be, s.query = srv.Backend, srv.Query()
	return s
}

// put stores b as key.
func (s *objectGets) put(t testing.TB, bucket, key string, b []byte) {
	t.Helper()
	// gofakes3 serves the Last-Modified its PUT handler records.
	meta := map[string]string{"Last-Modified": objectsModified.Format(http.TimeFormat)}
	if _, err := s.be.PutObject(bucket, key, meta, bytes.NewReader(b), int64(len(b)), nil); err != nil {
		t.Fatal(err)
	}
}

// take returns the GETs of each object since the last take.
func (s *objectGets) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts
	s.counts = map[string]int{}
	return c
}

// sameSizeRewrite returns contents for the file at path, written by
// writeGroups with groups groups of 3 and varied rewards, other than the ones
// it holds, of the same size and as trainable: the first of the files
// with other answers and rewards permuted that zstd packs into as many
// bytes.
func sameSizeRewrite(t *testing.T, md, path string, groups int) []byte {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	alt := filepath.Join(t.TempDir(), filepath.Base(path))
	for k := 1; k < 30; k++ {
		answer := func(g, i int) string { return fmt.Sprintf("move %d", (g*7+i*3+k)%10) }
		writeGroupsWith(t, md, alt, groups, 3, answer, func(g, i int) float64 { return varied(g, i+k/10) })
		b, err := os.ReadFile(alt)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == len(old) && !bytes.Equal(b, old) {
			return b
		}
	}
	t.Fatalf("no rewrite of %s of its size (%d bytes)", path, len(old))
	return nil
}

// TestWatchReadsOnlyWhatIsNew: a --watch-dir call over a folder of
// objects it consumed before reads none of them again (a stat of each,
// size, last-modified and ETag equal to those recorded when it was hashed,
// vouches for its contents): it reads the one new object, and a call with
// nothing new reads nothing. Each call used to read every object in the
// folder whole to hash it, the whole history of a folder that grows by a
// file a round. An object rewritten in place with other contents of the
// same size, within the second of its last-modified time, is read (its
// ETag differs) and trained as new data; a manifest written before stats
// were recorded has every file read once more, and its entries take their
// stats then.
func TestWatchReadsOnlyWhatIsNew(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	const bucket, n = "bkt", 4
	s3 := startObjectGets(t, bucket)
	local := filepath.Join(dir, "local")
	put := func(name string, groups int) {
		writeGroups(t, md, filepath.Join(local, name), groups, 3, varied)
		b, err := os.ReadFile(filepath.Join(local, name))
		if err != nil {
			t.Fatal(err)
		}
		s3.put(t, bucket, "incoming/"+name, b)
	}
	for i := range n {
		put(fmt.Sprintf("round%d.parquet", i+1), i+1)
	}
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = "s3://"+bucket+"/incoming/"+s3.query, 0
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	call := func(what string, wantConsumed int) (gets map[string]int, log string) {
		t.Helper()
		s3.take()
		var buf bytes.Buffer
		if err := runWith(context.Background(), backend(t), o, textLog(&buf)); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, buf.String())
		}
		man, err := run.ReadManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(man.Consumed) != wantConsumed || man.Pending != nil {
			t.Fatalf("%s: manifest %+v, want %d files consumed", what, man, wantConsumed)
		}
		return s3.take(), buf.String()
	}

	call("first call", n)
	put("round5.parquet", 1)
	if gets, log := call("the call after round5.parquet landed", n+1); len(gets) != 1 || gets["round5.parquet"] == 0 {
		t.Errorf("the call after round5.parquet landed read %v, want round5.parquet alone\n%s", gets, log)
	}
	if gets, log := call("a call with nothing new", n+1); len(gets) != 0 || !strings.Contains(log, "nothing new") {
		t.Errorf("a call with nothing new read %v, want nothing\n%s", gets, log)
	}

	// round1.parquet rewritten with other contents of its size, its
	// last-modified time the same (the fake's clock stands still).
	s3.put(t, bucket, "incoming/round1.parquet", sameSizeRewrite(t, md, filepath.Join(local, "round1.parquet"), 1))
	if gets, log := call("the call after round1.parquet was rewritten", n+2); len(gets) != 1 || gets["round1.parquet"] == 0 {
		t.Errorf("the call after round1.parquet was rewritten read %v, want round1.parquet alone\n%s", gets, log)
	}

	// The manifest as written before stats were recorded.
	man, err := run.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	for i := range man.Consumed {
		e := &man.Consumed[i]
		e.ModTime, e.ETag, e.HashedAt = time.Time{}, "", time.Time{}
	}
	if err := run.WriteManifest(man); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(run.Dir, checkpoint.ManifestName)); err != nil || bytes.Contains(b, []byte("mtime")) {
		t.Fatalf("the old-format manifest holds stats (%v):\n%s", err, b)
	}
	if gets, log := call("a call over an old-format manifest", n+2); len(gets) != n+1 || !strings.Contains(log, "nothing new") {
		t.Errorf("a call over an old-format manifest read %v, want each of the %d files once, and nothing new\n%s", gets, n+1, log)
	}
	if gets, log := call("the call after it", n+2); len(gets) != 0 {
		t.Errorf("the call after the old-format manifest was read read %v, want nothing\n%s", gets, log)
	}
	man, err = run.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	// Consumed[0] is round1.parquet's first contents, no longer in the
	// folder: no stat vouches for them.
	for _, e := range man.Consumed[1:] {
		if e.ETag == "" || e.ModTime.IsZero() || e.HashedAt.IsZero() {
			b, _ := json.Marshal(e)
			t.Errorf("consumed entry after the old-format manifest was read: %s, want its stat", b)
		}
	}
}

// TestWatchRereadsARacyFile: a consumed file rewritten in place with other
// contents of the same size, its modification time set back to the one
// recorded, is read again when that time was within RacyWindow of the
// moment it was hashed (it could have been written again within the
// granularity of its time), and its new contents are trained as a new
// file. A stat that matched would have passed it over as consumed.
func TestWatchRereadsARacyFile(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	path := filepath.Join(watch, "round1.parquet")
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch, 0
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	man, err := run.ReadManifest()
	if err != nil || len(man.Consumed) != 1 {
		t.Fatalf("after the first call: manifest %+v, %v", man, err)
	}
	e := man.Consumed[0]
	if e.ModTime.IsZero() || e.HashedAt.Sub(e.ModTime) > checkpoint.RacyWindow {
		t.Fatalf("round1.parquet, written as the test began, was hashed at %v with time %v: want a racy stat", e.HashedAt, e.ModTime)
	}
	if err := os.WriteFile(path, sameSizeRewrite(t, md, path, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, e.ModTime, e.ModTime); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	man, err = run.ReadManifest()
	if err != nil || len(man.Consumed) != 2 || man.Consumed[1].SHA256 == e.SHA256 || man.Consumed[1].Step != 2 {
		t.Fatalf("after the rewrite: manifest %+v, %v; want the new contents of round1.parquet consumed at step 2\n%s", man, err, log.String())
	}
}
