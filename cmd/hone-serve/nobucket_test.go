package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// hone-serve --adapters naming a bucket the store does not have (a typo:
// nothing in the cluster set-up makes buckets, so it never comes to exist)
// is bad input at start-up: exit 2, naming the bucket, the endpoint's
// password masked, and no temporary cache left behind. It was exit 1, as
// if the store had failed, where a deployment's log showed a failure to
// retry rather than a URL to correct.
func TestAdaptersMissingBucketExits2(t *testing.T) {
	tmp := t.TempDir()
	s3 := fakes3d.StartTest(t, "hone")
	const secret = "pw-serve-nobucket"
	url := strings.Replace(s3.URL("hnoe", "adapters"), "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--model", "../../serve/testdata/tiny", "--port", "0", "--threads", "1",
		"--adapters", url, "--poll-interval", "50ms")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "the bucket s3://hnoe/ does not exist") ||
		strings.Contains(string(out), secret) {
		t.Errorf("--adapters in a missing bucket: %v\n%s\nwant exit 2, saying the bucket s3://hnoe/ does not exist, the password masked", err, out)
	}
	if names, _ := os.ReadDir(tmp); len(names) > 0 {
		t.Errorf("%d entries stay in $TMPDIR, first %s", len(names), names[0].Name())
	}
}

// TestHelpExitCodesNameMissingBucket: --help's exit codes name every bad
// input that exits 2; the missing --adapters bucket (288860c) was said
// above them only, and a reader of the list took its exit 2 for a usage
// error.
func TestHelpExitCodesNameMissingBucket(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	_, codes, ok := strings.Cut(out.String(), "Exit codes:")
	codes, _, _ = strings.Cut(codes, "\n\n")
	if !ok || !strings.Contains(strings.Join(strings.Fields(codes), " "), "--adapters bucket that does not exist") {
		t.Errorf("--help's exit codes do not name the missing --adapters bucket:\n%s", codes)
	}
}
