package grpojob

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// TestNoGroupsNamesObjectWithoutQuery: an input object with no groups is
// bad input naming the object as the user names it, without the query
// that opens its bucket (endpoint=…&use_path_style=…), which said nothing
// of which input was empty and put the store's address in the message.
func TestNoGroupsNamesObjectWithoutQuery(t *testing.T) {
	dir, md, s := objectFixture(t)
	name := "s3://bkt/in/round1.parquet" + s.query
	writeGroups(t, md, name, 0, 3, varied)
	err := runWith(context.Background(), backend(t), baseOptions(md, filepath.Join(dir, "adapters"), "r", name), nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "no groups in s3://bkt/in/round1.parquet") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("run on an object with no groups: %v; want bad input naming s3://bkt/in/round1.parquet without its query", err)
	}
}

// TestInfiniteRewardNamesObjectRowWithoutQuery: a row with an infinite
// reward is bad input naming it as "FILE row N", FILE as the user names
// the object, without the query that opens its bucket
// (endpoint=…&use_path_style=…), which put the store's address in the
// message for every row listed.
func TestInfiniteRewardNamesObjectRowWithoutQuery(t *testing.T) {
	dir, md, s := objectFixture(t)
	name := "s3://bkt/in/round1.parquet" + s.query
	writeGroups(t, md, name, 2, 3, func(g, i int) float64 {
		if g == 1 && i == 2 {
			return math.Inf(1)
		}
		return varied(g, i)
	})
	err := runWith(context.Background(), backend(t), baseOptions(md, filepath.Join(dir, "adapters"), "r", name), nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "s3://bkt/in/round1.parquet row 5") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("run on an object with an infinite reward: %v; want bad input naming s3://bkt/in/round1.parquet row 5 without its query", err)
	}
}

// TestResumeWithTrainedObjectWarnsWithoutQuery: the warning that a
// session trains again an object an earlier session trained names it as
// the user does, without the query that opens its bucket
// (endpoint=…&use_path_style=…); the manifest keeps it, secrets masked.
func TestResumeWithTrainedObjectWarnsWithoutQuery(t *testing.T) {
	dir, md, s := objectFixture(t)
	a := "s3://bkt/in/a.parquet" + s.query
	writeGroups(t, md, a, 2, 3, varied)
	out := filepath.Join(dir, "adapters")
	o := baseOptions(md, out, "r", a)
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	// Written to the store directly: the fixture names the groups by
	// the object's base name, without the query.
	b := "s3://bkt/in/b.parquet" + s.query
	writeGroups(t, md, b, 4, 3, squares)
	o.Resume = true
	o.Inputs = baseOptions(md, out, "r", a, b).Inputs
	warn, text := runLastWarn(t, o, "round 2", "trained again")
	if !strings.Contains(warn, "s3://bkt/in/a.parquet (trained in session 0") || strings.Contains(warn, "endpoint=") {
		t.Errorf("round 2 (a again, and b) warned %q; want a warning naming s3://bkt/in/a.parquet without its query\n%s", warn, text)
	}
}

// TestWatchRollbackWarnsOfConsumedObjectWithoutQuery: the warning that a
// rollback leaves consumed files consumed names an object of the watched
// folder as the user does, without the query that opens its bucket
// (endpoint=…&use_path_style=…).
func TestWatchRollbackWarnsOfConsumedObjectWithoutQuery(t *testing.T) {
	dir, md, s := objectFixture(t)
	local := filepath.Join(dir, "round1.parquet")
	writeGroups(t, md, local, 2, 3, varied)
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	s.put(t, "bkt", "incoming/round1.parquet", b)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = "s3://bkt/incoming/"+s.query, 1, 2
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if err := runfolder.WritePointer(filepath.Join(dir, "cron"), runfolder.LatestName, 1); err != nil {
		t.Fatal(err)
	}
	warn, text := runLastWarn(t, o, "the call after latest moved back", "stay consumed")
	if !strings.Contains(warn, "s3://bkt/incoming/round1.parquet (sha256 ") || strings.Contains(warn, "endpoint=") {
		t.Errorf("the call after latest moved back warned %q; want a warning naming s3://bkt/incoming/round1.parquet without its query\n%s", warn, text)
	}
}

// TestWatchPendingObjectChangedNamesItWithoutQuery: an unfinished watch
// session whose object changed since is refused naming the object and
// the watched folder as the user does, without the query that opens their
// bucket (endpoint=…&use_path_style=…), which the message printed twice.
func TestWatchPendingObjectChangedNamesItWithoutQuery(t *testing.T) {
	dir, md, s := objectFixture(t)
	name := "s3://bkt/incoming/round1.parquet" + s.query
	writeGroups(t, md, name, 2, 3, varied)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = "s3://bkt/incoming/"+s.query, 1, 2
	var log bytes.Buffer
	stopAfterFirstStep(t, o, &log)
	writeGroups(t, md, name, 2, 3, squares)
	err := runWith(context.Background(), backend(t), o, textLog(&log))
	if err == nil || !strings.Contains(err.Error(), "needs s3://bkt/incoming/round1.parquet unchanged") ||
		!strings.Contains(err.Error(), "nor s3://bkt/incoming/ holds") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("the call after the object changed: %v; want an error naming s3://bkt/incoming/round1.parquet and s3://bkt/incoming/ without their query", err)
	}
}

// TestWatchHeldOutObjectsWarnWithoutQuery: the warning that a watched
// folder's new files hold only held-out rows (consumed untrained) names
// each object as the user does, without the query that opens its bucket
// (endpoint=…&use_path_style=…), which it printed for every file listed.
func TestWatchHeldOutObjectsWarnWithoutQuery(t *testing.T) {
	dir, md, s := objectFixture(t)
	local := filepath.Join(dir, "eval.parquet")
	writeGroups(t, md, local, 2, 3, varied)
	gs, err := trajectory.ReadFile(context.Background(), local)
	if err != nil {
		t.Fatal(err)
	}
	for gi := range gs {
		for ti := range gs[gi].Trajectories {
			gs[gi].Trajectories[ti].Split = trajectory.SplitVal
		}
	}
	if err := trajectory.WriteFile(context.Background(), "s3://bkt/in/eval.parquet"+s.query, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(md, filepath.Join(dir, "adapters"), "w")
	o.WatchDir = "s3://bkt/in/" + s.query
	warn, text := runLastWarn(t, o, "the call on held-out rows", "recorded as consumed")
	if !strings.Contains(warn, "s3://bkt/in/eval.parquet") || strings.Contains(warn, "endpoint=") {
		t.Errorf("a watched folder of held-out rows warned %q; want a warning naming s3://bkt/in/eval.parquet without its query\n%s", warn, text)
	}
}

// TestWatchLogNamesObjectsWithoutQuery: a --watch-dir call on an object
// folder names the folder and its objects in its log as the user does,
// without the query that opens the bucket (endpoint=…&use_path_style=…):
// the note on an object deleted between the listing and its read, and
// the "nothing new" line of every call that finds nothing, printed it.
func TestWatchLogNamesObjectsWithoutQuery(t *testing.T) {
	dir, md, s := objectFixture(t)
	s.put(t, "bkt", "in/gone.parquet", []byte("PAR1"))
	s.mu.Lock()
	s.before = func(r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/in/gone.parquet") {
			_, _ = s.be.DeleteObject("bkt", "in/gone.parquet") // deleted once listed
		}
	}
	s.mu.Unlock()
	o := baseOptions(md, filepath.Join(dir, "adapters"), "w")
	o.WatchDir = "s3://bkt/in/" + s.query
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "s3://bkt/in/gone.parquet") || !strings.Contains(log.String(), "nothing new") || strings.Contains(log.String(), "endpoint=") {
		t.Errorf("a call on a folder whose one object went before it was read logged:\n%s\nwant s3://bkt/in/gone.parquet named and \"nothing new\", without the bucket query", log.String())
	}
}

// runLastWarn runs o with a fresh text log, failing the test with what and
// the log on an error, and returns the last WARN line that mentions about
// (empty when none does) with the whole log, for the tests that check what
// one warning names.
func runLastWarn(t *testing.T, o Options, what, about string) (warn, log string) {
	t.Helper()
	var buf bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&buf)); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, buf.String())
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, about) {
			warn = line
		}
	}
	return warn, buf.String()
}

// objectFixture makes a test folder with the tiny model in it and starts
// the fake object store with bucket bkt, for the tests of how objects are
// named.
func objectFixture(t *testing.T) (dir, md string, s *objectGets) {
	t.Helper()
	dir = t.TempDir()
	return dir, tinyModel(t, dir), startObjectGets(t, "bkt")
}
