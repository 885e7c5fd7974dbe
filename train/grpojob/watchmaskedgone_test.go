package grpojob

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatchMaskedPendingGoneMessage: a pending session's object, kept in
// manifest.json with its endpoint's password masked and gone from the
// folder, is refused naming it and saying it was looked for by sha256 in
// the folder. The error said "neither that path nor DIR holds" it, though
// a masked name opens nothing and that path was never tried.
func TestWatchMaskedPendingGoneMessage(t *testing.T) {
	dir, md, s := objectFixture(t)
	q := withEndpointPassword(t, s.query)
	local := filepath.Join(dir, "round1.parquet")
	writeGroups(t, md, local, 2, 3, varied)
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	s.put(t, "bkt", "incoming/round1.parquet", b)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = "s3://bkt/incoming/"+q, 1, 2
	var log bytes.Buffer
	stopAfterFirstStep(t, o, &log)
	if _, err := s.be.DeleteObject("bkt", "incoming/round1.parquet"); err != nil {
		t.Fatal(err)
	}
	err = runWith(context.Background(), backend(t), o, textLog(&log))
	if err == nil {
		t.Fatalf("no error for a pending object gone from the folder\n%s", log.String())
	}
	msg := err.Error()
	for _, want := range []string{"s3://bkt/incoming/round1.parquet", "masked", "by sha256", "s3://bkt/incoming/"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "that path") || strings.Contains(msg, endpointSecret) {
		t.Errorf("error %q speaks of a path never tried, or holds the password", msg)
	}
}
