//go:build unix

package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestProxyStartInterrupt: a Ctrl-C while the recording proxy reads its
// output folder at start stops it there. The start's listing and scan ran
// without the command's context, so a Ctrl-C waited for them to finish:
// here the object store never answers the listing, and the proxy hung
// until it was killed.
func TestProxyStartInterrupt(t *testing.T) {
	var asked atomic.Bool
	stop := make(chan struct{})
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(true)
		select { // answer nothing until the client goes away or the test ends
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(store.Close)
	t.Cleanup(func() { close(stop) }) // runs first: the handlers return, then the server closes
	out := "s3://hone/proxied?endpoint=" + store.URL + "&use_path_style=true&disable_https=true&region=us-east-1"
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy", "--upstream", "http://127.0.0.1:1/v1",
		"-o", out, "--listen", "127.0.0.1:0")
	cmd.Env = append(cmd.Environ(), fakes3d.Env(t.TempDir())...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitfor.Within(60*time.Second, asked.Load) {
		t.Fatal("the proxy did not list its output folder")
	}
	cmd.Process.Signal(syscall.SIGINT)
	var exited atomic.Bool
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait(); exited.Store(true) }()
	if !waitfor.Within(30*time.Second, exited.Load) {
		t.Fatalf("the proxy still reads its output folder 30s after the interrupt: %s", stderr.String())
	}
	var ee *exec.ExitError
	if err := <-errc; !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr.String())
	}
}

// A Ctrl-C while the recording proxy reads the ids of an object-store
// folder's files stops it there, as it does during the listing: here the
// store lists the folder, then never answers for its file.
func TestProxyStartInterruptReadingObjects(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	up := openaitest.New(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Content: "hi", Model: "m"} })
	t.Cleanup(up.Close)
	proxyRound(t, up.BaseURL(), s3.URL("hone", "proxied"), "t1", "g1")
	target, err := url.Parse(s3.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	fwd := httputil.NewSingleHostReverseProxy(target)
	var asked atomic.Bool
	stop := make(chan struct{})
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(strings.Trim(r.URL.Path, "/"), "/") { // the bucket: its listing
			fwd.ServeHTTP(w, r)
			return
		}
		asked.Store(true)
		select { // an object: answer nothing until the client goes away or the test ends
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(store.Close)
	t.Cleanup(func() { close(stop) })
	out := "s3://hone/proxied?endpoint=" + store.URL + "&use_path_style=true&disable_https=true&region=us-east-1"
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy", "--upstream", "http://127.0.0.1:1/v1",
		"-o", out, "--listen", "127.0.0.1:0")
	cmd.Env = append(cmd.Environ(), fakes3d.Env(t.TempDir())...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitfor.Within(60*time.Second, asked.Load) {
		t.Fatalf("the proxy did not read the file in its output folder: %s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	var exited atomic.Bool
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait(); exited.Store(true) }()
	if !waitfor.Within(30*time.Second, exited.Load) {
		t.Fatalf("the proxy still reads its output folder 30s after the interrupt: %s", stderr.String())
	}
	var ee *exec.ExitError
	if err := <-errc; !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr.String())
	}
}
