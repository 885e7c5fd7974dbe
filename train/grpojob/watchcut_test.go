package grpojob

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/stageerr"
)

// TestWatchFailsOnAFileCutShortLongAgo: a Parquet file without its footer
// that no one has written to for longer than a writer pauses
// (unfinishedAfter) is not being written: its writer died, or a copy was
// cut short. The call fails as bad input naming it and saying what to do,
// as it did before files being written were left for later; it was
// warned about and passed over on every call, for good, and the cron
// job's exit code never showed that a scored file was not trained.
func TestWatchFailsOnAFileCutShortLongAgo(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	whole := filepath.Join(dir, "round2.parquet")
	writeGroups(t, md, whole, 2, 3, varied)
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(watch, "round2.parquet")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-unfinishedAfter - time.Minute)
	if err := os.Chtimes(cut, old, old); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch, 0
	var log bytes.Buffer
	err = runWith(context.Background(), backend(t), o, textLog(&log))
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "round2.parquet") || !strings.Contains(err.Error(), "footer") {
		t.Fatalf("err %v, want a bad-input error naming round2.parquet and its missing footer\n%s", err, log.String())
	}
}

// TestWatchFailsOnAnObjectCutShort: an object store shows an object only
// once its upload is whole, so an object without its Parquet footer has
// no writer still at it: it fails the call at once, naming it, where a
// local file's writer is given an hour (it was passed over for that hour,
// the cron job's exit code 0 meanwhile).
func TestWatchFailsOnAnObjectCutShort(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	const bucket = "bkt"
	s3 := startObjectGets(t, bucket)
	p := filepath.Join(dir, "round1.parquet")
	writeGroups(t, md, p, 2, 3, varied)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Uploaded a minute ago: a local file this young is still taken for
	// one being written.
	meta := map[string]string{"Last-Modified": time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat)}
	half := b[:len(b)/2]
	if _, err := s3.be.PutObject(bucket, "incoming/round1.parquet", meta, bytes.NewReader(half), int64(len(half)), nil); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = "s3://"+bucket+"/incoming/"+s3.query, 0
	var log bytes.Buffer
	err = runWith(context.Background(), backend(t), o, textLog(&log))
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "round1.parquet") || !strings.Contains(err.Error(), "footer") {
		t.Fatalf("err %v, want a bad-input error naming round1.parquet and its missing footer\n%s", err, log.String())
	}
	// The object is named as the user names it: the listed name's query
	// (the endpoint, path style) opens the bucket and says nothing of it.
	if !strings.Contains(err.Error(), "s3://"+bucket+"/incoming/round1.parquet:") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("err %v, want it to name s3://%s/incoming/round1.parquet without its query", err, bucket)
	}
}
