package grpojob

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// endpointSecret is the password the tests below give a fake store's
// endpoint, which no file of the run may hold.
const endpointSecret = "PW4endpoint9secret"

// withEndpointPassword is query with its endpoint given a user and
// endpointSecret as password (the fake store asks for neither).
func withEndpointPassword(t *testing.T, query string) string {
	t.Helper()
	q := strings.Replace(query, "endpoint=http://", "endpoint=http://me:"+endpointSecret+"@", 1)
	if q == query {
		t.Fatalf("the fake store's query %s has no endpoint=http://", query)
	}
	return q
}

// checkNoSecret fails naming each file under dir that holds endpointSecret.
func checkNoSecret(t *testing.T, what, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(endpointSecret)) {
			t.Errorf("%s: %s holds the endpoint's password", what, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatchRunFolderHoldsNoEndpointPassword: a --watch-dir on an object
// store whose endpoint carries a password keeps it out of the run folder
// (manifest.json's pending and consumed files, each step's
// trainer_state.json), through a session stopped midway and finished by
// the next call, and a later call still knows the consumed object by its
// stat without reading it. The names were kept as given, password and
// all, in files copied with the adapters.
func TestWatchRunFolderHoldsNoEndpointPassword(t *testing.T) {
	dir, md, s := objectFixture(t)
	q := withEndpointPassword(t, s.query)
	// Put with the fake's fixed time, long past: a later call's stat of
	// it is not racy, and vouches for it without a read.
	local := filepath.Join(dir, "round1.parquet")
	writeGroups(t, md, local, 2, 3, varied)
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	s.put(t, "bkt", "incoming/round1.parquet", b)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = "s3://bkt/incoming/"+q, 1, 2
	runDir := filepath.Join(dir, "cron")
	var log bytes.Buffer
	stopAfterFirstStep(t, o, &log)
	checkNoSecret(t, "the stopped call", runDir)
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call finishing the session: %v\n%s", err, log.String())
	}
	checkNoSecret(t, "the call finishing the session", runDir)
	man, err := (&checkpoint.Run{Dir: runDir}).ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Consumed) != 1 || man.Pending != nil {
		t.Fatalf("manifest after the session %+v, want round1.parquet consumed", man)
	}
	s.take()
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call after: %v\n%s", err, log.String())
	}
	if gets := s.take(); len(gets) != 0 || !strings.Contains(log.String(), "nothing new") {
		t.Errorf("the call after read %v; want nothing read and nothing new\n%s", gets, log.String())
	}
	checkNoSecret(t, "the call after", runDir)
}

// TestSessionRunFolderHoldsNoEndpointPassword: a run on a named object
// whose endpoint carries a password keeps it out of the run folder (the
// manifest's session, each step's trainer_state.json), and a resume on
// the same object continues that session.
func TestSessionRunFolderHoldsNoEndpointPassword(t *testing.T) {
	dir, md, s := objectFixture(t)
	name := "s3://bkt/in/a.parquet" + withEndpointPassword(t, s.query)
	writeGroups(t, md, name, 2, 3, varied)
	o := baseOptions(md, dir, "r", name)
	o.GroupsPerStep, o.Steps = 1, 1
	runDir := filepath.Join(dir, "r")
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	checkNoSecret(t, "the first call", runDir)
	o.Resume, o.Steps = true, 2
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the resume: %v\n%s", err, log.String())
	}
	checkNoSecret(t, "the resume", runDir)
	man, err := (&checkpoint.Run{Dir: runDir}).ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Sessions) != 1 {
		t.Errorf("sessions after the resume on the same object: %+v; want the one session continued", man.Sessions)
	}
}
