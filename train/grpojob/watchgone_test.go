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

// TestWatchPassesOverAFileGoneBeforeItIsRead: a file listed in the
// watched folder but deleted before the call reads it (a cleanup job, a
// writer moving it on) has nothing to train: the call trains the other
// files and says which one went. The call failed (exit 1, "no such file"),
// training nothing, whenever a deletion fell between its listing and its
// read. The folder is an object store here, where the fake server can
// delete the object at the moment its stat (HEAD) arrives.
func TestWatchPassesOverAFileGoneBeforeItIsRead(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	const bucket = "bkt"
	s3 := startObjectGets(t, bucket)
	for _, name := range []string{"round1.parquet", "round2.parquet"} {
		p := filepath.Join(dir, name)
		writeGroups(t, md, p, 2, 3, varied)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s3.put(t, bucket, "incoming/"+name, b)
	}
	s3.mu.Lock()
	s3.before = func(r *http.Request) {
		if r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/incoming/round2.parquet") {
			if _, err := s3.be.DeleteObject(bucket, "incoming/round2.parquet"); err != nil {
				t.Error(err)
			}
		}
	}
	s3.mu.Unlock()
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = "s3://"+bucket+"/incoming/"+s3.query, 0
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "gone before it was read") || !strings.Contains(log.String(), "round2.parquet") {
		t.Errorf("no line naming round2.parquet as gone:\n%s", log.String())
	}
	man, err := (&checkpoint.Run{Dir: filepath.Join(dir, "cron")}).ReadManifest()
	if err != nil || len(man.Consumed) != 1 || !strings.Contains(man.Consumed[0].Path, "round1.parquet") {
		t.Fatalf("manifest %+v, %v; want round1.parquet alone consumed", man, err)
	}
}
