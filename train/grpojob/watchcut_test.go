package grpojob

import (
	"bytes"
	"context"
	"errors"
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
