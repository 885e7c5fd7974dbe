package trajectory

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/fileset/s3test"
)

// TestReadIDsReadsFilesAtOnce: ReadIDs read one file after another, and
// each file over an object store is a few round trips (its size, its
// footer, its id columns), so a proxy starting on a folder of thousands
// of objects waited for thousands of requests in turn. Here the store
// answers no object request until 4 are waiting at once: read one at a
// time, the files are never read, and ReadIDs ends at the test's
// deadline. The ids still come in the set's order.
func TestReadIDsReadsFilesAtOnce(t *testing.T) {
	const together = 4
	var mu sync.Mutex
	waiting := 0
	open := make(chan struct{}) // closed once together requests waited at once
	gate := false
	s3 := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			gated := gate && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 // an object, not the bucket's listing
			if gated {
				if waiting++; waiting == together {
					close(open)
				}
			}
			mu.Unlock()
			if gated {
				select {
				case <-open:
				case <-r.Context().Done():
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}})
	var names, want []string
	for i := range 12 {
		gid := fmt.Sprintf("g%02d", i)
		name := s3.URL("bkt", "ids/"+gid+".parquet")
		g := Group{ID: gid, Trajectories: []Trajectory{{Run: "r", GroupID: gid, ID: gid + "-t", Env: "e",
			Messages: []Message{{Role: "user", Content: "question"}, {Role: "assistant", Content: "answer"}}}}}
		if err := WriteFile(context.Background(), name, []Group{g}, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		want = append(want, gid+"-t")
	}
	mu.Lock()
	gate = true
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := fileset.Files(names...)
	defer in.Close()
	var got []string
	err := ReadIDs(ctx, in, func(r RowIDs) error {
		got = append(got, r.TrajectoryID)
		return nil
	})
	if err != nil {
		t.Fatalf("%v (the files were read one at a time)", err)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ids %q, want %q", got, want)
	}
}
