package main

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestOutputNamingStoreFolderRefused: -o naming a folder of an object
// store without its trailing "/" (objects are under s3://…/round/) is
// refused before the run, exit 2, as -o naming a local folder is ("is a
// directory"). It wrote an object "round" beside the folder, which no
// folder input reads, and with --shard every shard wrote that one key, the
// last one's groups replacing the others'.
func TestOutputNamingStoreFolderRefused(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	if r := collectBin(t, "--env", "guess", "--groups", "3", "-G", "1", "--policy", "scripted:bisect", "--shard", "0/2", "-o", s3.URL("hone", "round/")); r.code != 0 {
		t.Fatalf("shard 0 into round/: exit %d: %s", r.code, r.stderr)
	}
	r := collectBin(t, "--env", "guess", "--groups", "3", "-G", "1", "--policy", "scripted:bisect", "--shard", "1/2", "-o", s3.URL("hone", "round"))
	if r.code != 2 || !strings.Contains(r.stderr, `"s3://hone/round"`) || !strings.Contains(r.stderr, "folder") {
		t.Errorf("-o naming the folder round without its /: exit %d: %s; want 2, naming it as a folder", r.code, r.stderr)
	}
	if _, err := fileset.StatFile(context.Background(), s3.URL("hone", "round")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an object named round: %v; want none", err)
	}
	// One left beside the folder by such a run before does not make the
	// name any less a folder.
	if err := fileset.WriteFile(context.Background(), s3.URL("hone", "round"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if r := collectBin(t, "--env", "guess", "--groups", "3", "-G", "1", "--policy", "scripted:bisect", "-o", s3.URL("hone", "round")); r.code != 2 {
		t.Errorf("-o naming the folder round beside an object round: exit %d: %s; want 2", r.code, r.stderr)
	}
}
