package runfolder

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// A store's run folder whose bucket does not exist (a typo in --adapters
// or --out: it never will) read as a run not published yet: Pull copied
// nothing and said nothing, and a follower polling it waited in silence
// for good. It is an error naming the bucket; a bucket that exists and
// holds no latest yet still pulls nothing, without an error.
func TestPullMissingBucket(t *testing.T) {
	ctx := context.Background()
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	typo := strings.Replace(url("adapters/r"), "s3://bkt/", "s3://bkt-typo/", 1)
	steps, err := Pull(ctx, typo, filepath.Join(t.TempDir(), "r"), PullOptions{})
	if !errors.Is(err, fileset.ErrNoBucket) || !strings.Contains(err.Error(), "s3://bkt-typo/") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("Pull from a missing bucket: %v, steps %v; want an error naming the bucket s3://bkt-typo/ (matching ErrNoBucket) without the bucket query", err, steps)
	}
	steps, err = Pull(ctx, url("adapters/r"), filepath.Join(t.TempDir(), "r"), PullOptions{})
	if err != nil || len(steps) != 0 {
		t.Errorf("Pull of a run not published yet: steps %v, %v; want none and no error", steps, err)
	}
}

// Publishing to a bucket that does not exist must fail, saying so, not
// take the store for one that has no latest yet.
func TestPublishMissingBucket(t *testing.T) {
	ctx := context.Background()
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	local := filepath.Join(t.TempDir(), "r")
	writeStepFiles(t, local, 1, "adapter_model.safetensors")
	if err := WritePointer(local, LatestName, 1); err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(url("adapters/r"), "s3://bkt/", "s3://bkt-typo/", 1)
	done, err := Publish(ctx, local, typo)
	if !errors.Is(err, fileset.ErrNoBucket) || !strings.Contains(err.Error(), "s3://bkt-typo/") || len(done) != 0 {
		t.Errorf("Publish to a missing bucket: %v, steps %v; want an error naming the bucket s3://bkt-typo/ (matching ErrNoBucket), nothing published", err, done)
	}
	if done, err := Publish(ctx, local, url("adapters/r")); err != nil || len(done) != 1 {
		t.Errorf("Publish to a bucket without the run yet: steps %v, %v; want step 1", done, err)
	}
}
