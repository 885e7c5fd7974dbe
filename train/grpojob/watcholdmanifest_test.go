package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// unmaskManifest rewrites runDir's manifest.json as the code before names
// were masked wrote it: each consumed, pending and session file named as
// listed,
// the endpoint's password and all (query is the command's).
func unmaskManifest(t *testing.T, runDir, query string) {
	t.Helper()
	p := filepath.Join(runDir, checkpoint.ManifestName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	fix := func(es any) {
		list, _ := es.([]any)
		for _, e := range list {
			f := e.(map[string]any)
			path := f["path"].(string)
			if i := strings.IndexByte(path, '?'); i >= 0 {
				f["path"], n = path[:i]+query, n+1
			}
		}
	}
	fix(m["consumed"])
	if pend, ok := m["pending"].(map[string]any); ok {
		fix(pend["files"])
	}
	sessions, _ := m["sessions"].([]any)
	for _, sess := range sessions {
		fix(sess.(map[string]any)["files"])
	}
	if n == 0 {
		t.Fatalf("%s names no object to unmask:\n%s", p, b)
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(endpointSecret)) {
		t.Fatalf("the rewritten manifest holds no password:\n%s", out)
	}
}

// TestWatchOldManifestWithPasswordResumes: a run folder whose manifest
// the code before masking wrote (object names with the endpoint's
// password) still finishes its pending session, still knows its consumed
// object by its stat without reading it, and is rewritten masked.
func TestWatchOldManifestWithPasswordResumes(t *testing.T) {
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
	runDir := filepath.Join(dir, "cron")
	var log bytes.Buffer
	stopAfterFirstStep(t, o, &log)
	unmaskManifest(t, runDir, q)
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call finishing the old manifest's session: %v\n%s", err, log.String())
	}
	checkNoSecret(t, "the call finishing the session", runDir)
	unmaskManifest(t, runDir, q)
	s.take()
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call on the old manifest's consumed object: %v\n%s", err, log.String())
	}
	if gets := s.take(); len(gets) != 0 || !strings.Contains(log.String(), "nothing new") {
		t.Errorf("the call on the old manifest read %v; want nothing read and nothing new\n%s", gets, log.String())
	}
	// A password changed since (rotated keys) names the same object.
	o.WatchDir = "s3://bkt/incoming/" + strings.Replace(q, endpointSecret, "rotated7", 1)
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call with a new password: %v\n%s", err, log.String())
	}
	if gets := s.take(); len(gets) != 0 || !strings.Contains(log.String(), "nothing new") {
		t.Errorf("the call with a new password read %v; want nothing read and nothing new\n%s", gets, log.String())
	}
}

// TestWatchEscapedEndpointPasswordKeptOut: a --watch-dir whose endpoint
// is written query-escaped (endpoint=http%3A%2F%2Fme%3APW%40host, as
// url.Values.Encode writes it) keeps the password out of the run folder
// too, through a session stopped midway and finished by the next call,
// and a later call knows the consumed object without reading it. The
// escaped password stood in manifest.json and train_config.json.
func TestWatchEscapedEndpointPasswordKeptOut(t *testing.T) {
	dir, md, s := objectFixture(t)
	q, err := url.ParseQuery(strings.TrimPrefix(withEndpointPassword(t, s.query), "?"))
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "round1.parquet")
	writeGroups(t, md, local, 2, 3, varied)
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	s.put(t, "bkt", "incoming/round1.parquet", b)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep, o.Steps = "s3://bkt/incoming/?"+q.Encode(), 1, 2
	if !strings.Contains(o.WatchDir, "%3A"+endpointSecret+"%40") {
		t.Fatalf("--watch-dir %s does not hold the escaped password", o.WatchDir)
	}
	runDir := filepath.Join(dir, "cron")
	var log bytes.Buffer
	stopAfterFirstStep(t, o, &log)
	checkNoSecret(t, "the stopped call", runDir)
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call finishing the session: %v\n%s", err, log.String())
	}
	checkNoSecret(t, "the call finishing the session", runDir)
	s.take()
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the call after: %v\n%s", err, log.String())
	}
	if gets := s.take(); len(gets) != 0 || !strings.Contains(log.String(), "nothing new") {
		t.Errorf("the call after read %v; want nothing read and nothing new\n%s", gets, log.String())
	}
}

// TestWatchLocalNameWithQueryMarkKeptWhole: a local file whose name holds
// a '?' (round?v=1.parquet), which no store reads as a query, is recorded
// in manifest.json by its name as it is, as before names were masked;
// masked as a URL's query, two files of the folder both read
// round?v=REDACTED, named apart nowhere, and a pending one was looked for
// by sha256 instead of at its path.
func TestWatchLocalNameWithQueryMarkKeptWhole(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := filepath.Join(dir, "incoming")
	if err := os.Mkdir(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(watch, "round?v=1.parquet"), filepath.Join(watch, "round?v=2.parquet")
	writeGroups(t, md, a, 2, 3, varied)
	writeGroups(t, md, b, 2, 3, squares)
	o := baseOptions(md, dir, "r")
	o.WatchDir, o.GroupsPerStep, o.Steps = watch, 1, 1
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	man, err := (&checkpoint.Run{Dir: filepath.Join(dir, "r")}).ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range man.Consumed {
		got = append(got, f.Path)
	}
	if len(got) != 2 || !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Errorf("consumed %q; want %q and %q", got, a, b)
	}
}

// TestWatchOldManifestMaskedByNothingNewCall: an old manifest.json (the
// endpoint's password in its consumed names) is rewritten masked by a
// call that finds nothing new, and the next call still knows the
// consumed object by its stat without reading it. Only a call that
// trained rewrote it, so a folder with nothing new kept the password.
func TestWatchOldManifestMaskedByNothingNewCall(t *testing.T) {
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
	o.WatchDir, o.GroupsPerStep, o.Steps = "s3://bkt/incoming/"+q, 1, 1
	runDir := filepath.Join(dir, "cron")
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the first call: %v\n%s", err, log.String())
	}
	unmaskManifest(t, runDir, q)
	for _, call := range []string{"the call on the old manifest", "the call after"} {
		s.take()
		log.Reset()
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("%s: %v\n%s", call, err, log.String())
		}
		if gets := s.take(); len(gets) != 0 || !strings.Contains(log.String(), "nothing new") {
			t.Errorf("%s read %v; want nothing read and nothing new\n%s", call, gets, log.String())
		}
		checkNoSecret(t, call, runDir)
	}
}

// TestResumeOldManifestMaskedWhenSessionComplete: an old manifest.json
// (the endpoint's password in its session's names) is rewritten masked
// by a --resume on the same named object that finds its session already
// complete, as a --watch-dir call with nothing new rewrites it. Only a
// resume that trained rewrote it, so one with nothing to train kept the
// password.
func TestResumeOldManifestMaskedWhenSessionComplete(t *testing.T) {
	dir, md, s := objectFixture(t)
	q := withEndpointPassword(t, s.query)
	name := "s3://bkt/in/a.parquet" + q
	writeGroups(t, md, name, 2, 3, varied)
	o := baseOptions(md, dir, "r", name)
	o.GroupsPerStep, o.Steps = 1, 1
	runDir := filepath.Join(dir, "r")
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the first call: %v\n%s", err, log.String())
	}
	unmaskManifest(t, runDir, q)
	o.Resume = true
	for _, call := range []string{"the resume on the old manifest", "the resume after"} {
		log.Reset()
		if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
			t.Fatalf("%s: %v\n%s", call, err, log.String())
		}
		checkNoSecret(t, call, runDir)
		man, err := (&checkpoint.Run{Dir: runDir}).ReadManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(man.Sessions) != 1 || man.Sessions[0].EndStep != 1 {
			t.Errorf("%s: sessions %+v; want the one session, complete at step 1", call, man.Sessions)
		}
	}
}
