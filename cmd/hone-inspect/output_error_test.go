package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// A write that fails (a full disk, a file size limit) named the output's
// temporary file (".r.html.tmp-…"), which the user never wrote, or the
// device a symlink leads to, rather than the output as given.
func TestReportWriteErrorNamesOutput(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(metrics, []byte("{\"step\":1,\"tokens\":10}\n{\"step\":2,\"tokens\":20}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// ulimit -f 1 lets the command write 1 KiB; the page is far larger.
	out := filepath.Join(dir, "r.html")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -f 1 && exec "$0" "$@"`, binary, "report", metrics, "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(stderr.String(), `"`+out+`"`) || strings.Contains(stderr.String(), ".tmp-") {
		t.Errorf("past the file size limit: %v, stderr %q; want a failure naming %q and no temporary file", err, stderr.String(), out)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	link := filepath.Join(dir, "full.html")
	if err := os.Symlink("/dev/full", link); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "report", metrics, "-o", link)
	if r.code == 0 || !strings.Contains(r.stderr, `"`+link+`"`) {
		t.Errorf("-o a symlink to /dev/full: exit %d, stderr %q; want a failure naming %q", r.code, r.stderr, link)
	}
}

// An object store output is staged in $TMPDIR first, and a write that
// failed there (a full $TMPDIR, a file size limit) named the staged file,
// ".hone-upload.tmp-…", which is unlinked as soon as it is made, so the
// user found nothing under the name given: it now names the output, as
// the user does, without the bucket query (endpoint=…).
func TestReportObjectWriteErrorNamesOutput(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(metrics, []byte("{\"step\":1,\"tokens\":10}\n{\"step\":2,\"tokens\":20}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s3 := fakes3d.StartTest(t, "runs")
	out := s3.URL("runs", "r.html")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// ulimit -f 1 lets the command stage 1 KiB; the page is far larger.
	cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -f 1 && exec "$0" "$@"`, binary, "report", metrics, "-o", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(stderr.String(), `"s3://runs/r.html"`) || strings.Contains(stderr.String(), "endpoint=") || strings.Contains(stderr.String(), ".tmp-") {
		t.Errorf("past the file size limit: %v, stderr %q; want a failure naming \"s3://runs/r.html\" without its query and no temporary file", err, stderr.String())
	}
}
