package grpojob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3/backend/s3mem"

	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
	"github.com/hone-rl/hone/format/fileset/s3test"
	"github.com/hone-rl/hone/train/checkpoint"
)

// A file of the watched folder replaced after watch mode first read it
// (a producer rewriting round1.parquet in place): the session trains the
// contents it hashed and records their hash; the new contents are new
// data for the next call. Watch mode used to hash the file, then open it
// again to decode it: it trained the new contents under the old contents'
// hash, and the next call, not finding the new contents' hash, trained
// them again. The folder is in a real S3 protocol server (gofakes3) that
// replaces the object at the first request for it after one whole read,
// so the reproduction needs no timing.
func TestWatchTrainsTheBytesItHashed(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	local := filepath.Join(dir, "local")
	writeGroups(t, md, filepath.Join(local, "old.parquet"), 1, 3, varied)
	writeGroups(t, md, filepath.Join(local, "new.parquet"), 2, 3, varied)
	oldB, err := os.ReadFile(filepath.Join(local, "old.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	newB, err := os.ReadFile(filepath.Join(local, "new.parquet"))
	if err != nil {
		t.Fatal(err)
	}

	const bucket, key = "bkt", "incoming/round1.parquet"
	var be *s3mem.Backend // the server's, set before it serves a request
	var mu sync.Mutex
	read, replaced := false, false
	replace := func() {
		if _, err := be.PutObject(bucket, key, map[string]string{}, bytes.NewReader(newB), int64(len(newB)), nil); err != nil {
			t.Error(err)
		}
		replaced = true
	}
	srv := s3test.Start(t, s3test.Options{Buckets: []string{bucket}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ours := strings.HasSuffix(r.URL.Path, "/"+key)
			if ours {
				mu.Lock()
				if read && !replaced {
					replace()
				}
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
			if ours && r.Method == http.MethodGet {
				mu.Lock()
				read = true
				mu.Unlock()
			}
		})
	}})
	be = srv.Backend
	query := srv.Query()
	if _, err := be.PutObject(bucket, key, map[string]string{}, bytes.NewReader(oldB), int64(len(oldB)), nil); err != nil {
		t.Fatal(err)
	}

	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = "s3://"+bucket+"/incoming/"+query, 0
	runDir := filepath.Join(dir, "cron")
	// call trains what is new and returns the groups of the step it
	// trained and the hash its manifest recorded for it.
	call := func() (groups float64, sum string) {
		t.Helper()
		var log bytes.Buffer
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		rows := readMetrics(t, runDir)
		man, err := (&checkpoint.Run{Dir: runDir}).ReadManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(man.Consumed) == 0 {
			t.Fatalf("nothing consumed; metrics %v\n%s", rows, log.String())
		}
		return rows[len(rows)-1]["groups"], man.Consumed[len(man.Consumed)-1].SHA256
	}
	hash := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

	groups, sum := call()
	if sum != hash(oldB) || groups != 1 {
		t.Errorf("first call: trained %v groups and recorded sha256 %s; the file it hashed first holds 1 group, sha256 %s (the replacement: 2 groups, %s)",
			groups, sum, hash(oldB), hash(newB))
	}
	// The replacement is there now (if no request came after the whole
	// read, it is put here): new data for the next call.
	mu.Lock()
	if !replaced {
		replace()
	}
	mu.Unlock()
	groups, sum = call()
	if sum != hash(newB) || groups != 2 {
		t.Errorf("second call: trained %v groups and recorded sha256 %s, want the replacement's 2 groups, %s", groups, sum, hash(newB))
	}
	man, err := (&checkpoint.Run{Dir: runDir}).ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Consumed) != 2 {
		t.Errorf("manifest consumed %d entries, want 2 (each content once): %+v", len(man.Consumed), man.Consumed)
	}
}
