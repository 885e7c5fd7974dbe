package runfolder

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/fileset/s3test"
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

// A bucket deleted while Pull runs (after its listing lacked the step
// latest named) was said to be a step pruned by a newer publish, "pull
// again": a follower was told to wait for what will not come. The error
// says the bucket does not exist.
func TestPullBucketGoneAfterListing(t *testing.T) {
	ctx := context.Background()
	var once sync.Once
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			if r.Method != http.MethodGet || strings.Trim(r.URL.Path, "/") != "bkt" {
				return // not a listing
			}
			once.Do(func() {
				// The bucket goes, emptied first as S3 asks.
				for _, p := range []string{"/bkt/adapters/r/" + StepName(1) + "/adapter_config.json", "/bkt/adapters/r/" + LatestName, "/bkt"} {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodDelete, p, nil))
					if rec.Code/100 != 2 {
						t.Errorf("DELETE %s: %d %s", p, rec.Code, rec.Body)
					}
				}
			})
		})
	}})
	store := srv.URL("bkt", "adapters/r")
	writeLatestPastSteps(t, ctx, store)
	_, err := Pull(ctx, store, filepath.Join(t.TempDir(), "r"), PullOptions{})
	if !errors.Is(err, fileset.ErrNoBucket) || !strings.Contains(err.Error(), "s3://bkt/") || strings.Contains(err.Error(), "pull again") {
		t.Errorf("Pull whose bucket went after its listing: %v; want an error saying the bucket s3://bkt/ does not exist, not to pull again", err)
	}
}
