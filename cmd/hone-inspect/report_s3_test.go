package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestReportObjectStoreRun: report takes a run folder that hone-train
// published to object storage (--out s3://…), as every hone path may be
// a URL (docs/cluster.md), and draws it as the same run read locally: the
// run's name, its steps and its latest step's train_config.json. It
// stat'ed the URL as a local path and failed with "no such file or
// directory", printing the bucket query. A URL that holds no run says so.
func TestReportObjectStoreRun(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp) // where a pulled copy would stay
	local, _, _ := writeRunFolder(t, dir, 6)
	s3 := fakes3d.StartTest(t, "hone")
	remote := s3.URL("hone", "adapters/r1")
	if _, err := runfolder.Publish(context.Background(), local, remote); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	mustRun(t, nil, "report", remote, "-o", out)
	page, d := readPage(t, out)
	if len(d.Runs) != 1 || d.Runs[0].Name != "r1" {
		t.Errorf("runs %+v; want r1", d.Runs)
	}
	for _, frag := range []string{"<title>Hone run r1</title>", "6 (step 1 to 6)", "train_config.json of r1 (step 6)"} {
		if !strings.Contains(page, frag) {
			t.Errorf("page lacks %q", frag)
		}
	}
	if strings.Contains(page, "endpoint=") {
		t.Errorf("page shows the bucket query")
	}

	r := run(t, nil, "report", s3.URL("hone", "adapters/none"), "-o", out)
	if r.code != 2 || !strings.Contains(r.stderr, "s3://hone/adapters/none") || strings.Contains(r.stderr, "endpoint=") {
		t.Errorf("a URL without a run: exit %d\n%s\nwant 2, naming it without its query", r.code, r.stderr)
	}
	if names, _ := os.ReadDir(tmp); len(names) > 0 {
		t.Errorf("%d entries stay in $TMPDIR, first %s", len(names), names[0].Name())
	}
}

// TestReportObjectStoreRunNamesURL: report on a run pulled from object
// storage names its files by the URL the user gave, in an error about
// one of them and in the page's list of files read, never by the
// temporary folder it was pulled into, which the user never named and
// which is gone once report exits.
func TestReportObjectStoreRunNamesURL(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s3 := fakes3d.StartTest(t, "hone")
	good, _, _ := writeNamedRun(t, dir, "good", 3, 2e-5)
	bad, _, _ := writeNamedRun(t, dir, "bad", 3, 2e-5)
	f, err := os.OpenFile(filepath.Join(bad, runfolder.MetricsName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{not json\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{good, bad} {
		if _, err := runfolder.Publish(context.Background(), r, s3.URL("hone", "adapters/"+filepath.Base(r))); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "report.html")
	mustRun(t, nil, "report", s3.URL("hone", "adapters/good"), "-o", out)
	page, _ := readPage(t, out)
	if want := "s3://hone/adapters/good/" + runfolder.MetricsName; !strings.Contains(page, want) || strings.Contains(page, tmp) {
		at := max(0, strings.Index(page, tmp))
		t.Errorf("the page's files read: want %s, not the temporary folder %s: %s", want, tmp, page[at:min(len(page), at+300)])
	}
	r := run(t, nil, "report", s3.URL("hone", "adapters/bad"), "-o", out)
	if want := "s3://hone/adapters/bad/" + runfolder.MetricsName; r.code != 2 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, tmp) {
		t.Errorf("a pulled run with a bad metrics line: exit %d\n%s\nwant 2, naming %s, not the temporary folder %s", r.code, r.stderr, want, tmp)
	}
}

// TestReportObjectStoreRunNoBucket: report on a URL whose bucket is not
// there says so, as every other command does (the store's settings shown,
// which say where it asked; the endpoint's password masked). It said the
// URL "holds no published run: no latest names a step there", which sent
// the user looking for a run in a misspelt bucket.
func TestReportObjectStoreRunNoBucket(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s3 := fakes3d.StartTest(t, "hone")
	const secret = "pw-report-nobucket"
	url := strings.Replace(s3.URL("hnoe", "adapters/r1"), "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	r := run(t, nil, "report", url, "-o", filepath.Join(dir, "report.html"))
	if r.code != 2 || !strings.Contains(r.stderr, "the bucket s3://hnoe/ does not exist") ||
		strings.Contains(r.stderr, "holds no published run") || strings.Contains(r.stderr, secret) {
		t.Errorf("a URL whose bucket is missing: exit %d\n%s\nwant 2, saying the bucket does not exist, the password masked", r.code, r.stderr)
	}
	if names, _ := os.ReadDir(tmp); len(names) > 0 {
		t.Errorf("%d entries stay in $TMPDIR, first %s", len(names), names[0].Name())
	}
}
