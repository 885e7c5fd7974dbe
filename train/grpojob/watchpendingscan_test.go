package grpojob

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// TestWatchPendingSessionFoundPastOtherFiles: an unfinished watch
// session whose folder moved finds its file by sha256 among the moved
// folder's files without reading those whose size differs from the one
// the manifest records, and an unrelated file that cannot be read is
// passed over with a warning naming it. The search read every file of
// the folder whole, and one unreadable file failed the call, so the
// session could not be finished until that file was removed. The folder
// is an object store here, where the fake server counts each object's
// reads (GETs) and answers one object's with an error.
func TestWatchPendingSessionFoundPastOtherFiles(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	const bucket = "bkt"
	s3 := startObjectGets(t, bucket)
	round1, other := filepath.Join(dir, "round1.parquet"), filepath.Join(dir, "other.parquet")
	writeGroups(t, md, round1, 2, 3, varied)
	writeGroups(t, md, other, 3, 3, varied)
	b1, err := os.ReadFile(round1)
	if err != nil {
		t.Fatal(err)
	}
	bo, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if len(bo) == len(b1) {
		t.Fatal("the fixture's other file has round1's size: the test cannot tell it was passed over by size")
	}
	s3.put(t, bucket, "first/round1.parquet", b1)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = "s3://"+bucket+"/first/"+s3.query, 1, 2
	var log bytes.Buffer
	stopAfterFirstStep(t, o, &log)
	// The folder moves: round1 under incoming/, beside a file of another
	// size and one of round1's size whose reads fail.
	if _, err := s3.be.DeleteObject(bucket, "first/round1.parquet"); err != nil {
		t.Fatal(err)
	}
	broken := bytes.Clone(b1)
	broken[len(broken)/2] ^= 0xff
	s3.put(t, bucket, "incoming/broken.parquet", broken)
	s3.put(t, bucket, "incoming/other.parquet", bo)
	s3.put(t, bucket, "incoming/round1.parquet", b1)
	s3.mu.Lock()
	s3.before = func(r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/incoming/broken.parquet") {
			r.Method = "PATCH" // the server refuses it: a read that fails
		}
	}
	s3.mu.Unlock()
	s3.take()
	o.WatchDir = "s3://" + bucket + "/incoming/" + s3.query
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the next call, the folder moved: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "broken.parquet") || !strings.Contains(log.String(), "level=WARN") {
		t.Errorf("no warning naming broken.parquet:\n%s", log.String())
	}
	if n := s3.take()["other.parquet"]; n != 0 {
		t.Errorf("other.parquet, of another size than the session's file, was read %d times", n)
	}
	man, err := (&checkpoint.Run{Dir: filepath.Join(dir, "cron")}).ReadManifest()
	if err != nil || man.Pending != nil || len(man.Consumed) != 1 || man.Consumed[0].Step != 2 || !strings.Contains(man.Consumed[0].Path, "incoming/round1.parquet") {
		t.Fatalf("manifest %+v, %v; want incoming/round1.parquet consumed at step 2", man, err)
	}
}
