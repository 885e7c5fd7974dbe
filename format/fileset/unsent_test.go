package fileset

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type unsentRow struct {
	ID   int64  `parquet:"id"`
	Text string `parquet:"text"`
}

// writeRows writes rows to a new output name as one Parquet file and
// commits it, returning Commit's error.
func writeRows(t *testing.T, name string, rows []unsentRow) error {
	t.Helper()
	out, err := Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := parquet.Write(out, rows); err != nil {
		t.Fatal(err)
	}
	return out.Commit()
}

// TestS3FailedUploadKeepsData: an upload that fails through a short
// outage (more 503s than the SDK's own 3 attempts) is tried again whole,
// and one that keeps failing leaves its bytes in a local file, named by
// the error, that holds the whole Parquet output: the end of a long
// collect run must not throw away what it paid for because the store was
// down for a minute. WriteFile, whose caller has the bytes, keeps none.
func TestS3FailedUploadKeepsData(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	wd := t.TempDir()
	t.Chdir(wd)
	rows := make([]unsentRow, 500)
	for i := range rows {
		rows[i] = unsentRow{ID: int64(i), Text: strings.Repeat("r", i%37)}
	}

	name := s3.url("bkt", "out/a.parquet")
	s3.set(func(f *faultyS3) { f.fail, f.failOn = 4, http.MethodPut })
	if err := writeRows(t, name, rows); err != nil {
		t.Fatalf("upload through 4 answers of 503: %v; want it tried again", err)
	}
	if got, err := parquet.Read[unsentRow](bytes.NewReader(readObject(t, name)), int64(len(readObject(t, name)))); err != nil || len(got) != len(rows) {
		t.Fatalf("object after a retried upload: %d rows, %v", len(got), err)
	}

	other := s3.url("bkt", "out/b.parquet")
	s3.set(func(f *faultyS3) { f.fail, f.failOn = 1000, http.MethodPut })
	err := writeRows(t, other, rows)
	s3.set(func(f *faultyS3) { f.fail = 0 })
	if err == nil || !strings.Contains(err.Error(), "s3://bkt/out/b.parquet") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("upload to a store answering 503: %v; want an error naming the URL", err)
	}
	if _, err := Open(context.Background(), other); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a failed upload: %v; want nothing there", err)
	}
	kept := regexp.MustCompile(`(/\S*hone-unsent-b-\d+\.parquet)`).FindString(err.Error())
	if kept == "" {
		t.Fatalf("failed upload: %v; want it to name a local file holding the output", err)
	}
	if filepath.Dir(kept) != wd {
		t.Errorf("kept in %s; want the working directory %s", filepath.Dir(kept), wd)
	}
	data, rerr := os.ReadFile(kept)
	if rerr != nil {
		t.Fatal(rerr)
	}
	got, rerr := parquet.Read[unsentRow](bytes.NewReader(data), int64(len(data)))
	if rerr != nil || len(got) != len(rows) || got[499] != rows[499] {
		t.Fatalf("kept file %s: %d rows, %v; want the %d rows written", kept, len(got), rerr, len(rows))
	}
	if left, _ := filepath.Glob(filepath.Join(wd, ".*")); len(left) > 0 {
		t.Errorf("temporary files left beside the kept one: %v", left)
	}

	// WriteFile's caller holds the bytes (a judge cache entry, a run
	// folder's file that stays local): nothing is kept for it.
	err = WriteFile(context.Background(), s3.url("nobkt", "x.json"), []byte("{}"))
	if err == nil || strings.Contains(err.Error(), "hone-unsent") {
		t.Errorf("WriteFile to a missing bucket: %v; want an error keeping nothing", err)
	}
	if left, _ := filepath.Glob(filepath.Join(wd, "hone-unsent-*")); len(left) != 1 {
		t.Errorf("local files after the failed uploads: %v; want the one of Commit", left)
	}
}

// TestUnsentHintQuotesPaths: the upload command a failed upload's error
// gives runs as written in a shell where the kept file's folder or the
// object's key holds a space or a quote: each path is one word. It
// printed them bare, so the command pasted from the error copied the
// wrong file or failed.
func TestUnsentHintQuotesPaths(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	wd := filepath.Join(t.TempDir(), "my run's dir")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	s3.set(func(f *faultyS3) { f.fail, f.failOn = 1000, http.MethodPut })
	err := writeRows(t, s3.url("bkt", "out dir/b c.parquet"), []unsentRow{{ID: 1}})
	if err == nil {
		t.Fatal("upload to a store answering 503: no error")
	}
	m := regexp.MustCompile("`(aws s3 cp [^`]*)`").FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("failed upload: %v; want the command to upload the kept file", err)
	}
	kept, _ := filepath.Glob(filepath.Join(wd, "hone-unsent-*"))
	if len(kept) != 1 {
		t.Fatalf("kept files %v; want one", kept)
	}
	// aws is a shell function here printing its arguments one a line.
	got, rerr := exec.Command("sh", "-c", `aws() { printf '%s\n' "$@"; }; `+m[1]).Output()
	if rerr != nil {
		t.Fatalf("running %s: %v", m[1], rerr)
	}
	want := strings.Join([]string{"s3", "cp", kept[0], "s3://bkt/out dir/b c.parquet"}, "\n") + "\n"
	if string(got) != want {
		t.Errorf("%s gives the words\n%s; want\n%s", m[1], got, want)
	}
}
