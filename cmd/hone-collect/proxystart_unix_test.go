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
	store, asked := stallingStore(t, nil)
	interruptStartingProxy(t, store, asked, "list its output folder")
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
	store, asked := stallingStore(t, httputil.NewSingleHostReverseProxy(target))
	interruptStartingProxy(t, store, asked, "read the file in its output folder")
}

// stallingStore starts an object store that answers nothing, until the
// client goes away or the test ends, and returns its URL and whether it
// was asked. With listing set, a bucket's listing is answered from there
// and only objects go unanswered.
func stallingStore(t *testing.T, listing http.Handler) (string, *atomic.Bool) {
	t.Helper()
	asked := new(atomic.Bool)
	stop := make(chan struct{})
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if listing != nil && !strings.Contains(strings.Trim(r.URL.Path, "/"), "/") { // the bucket: its listing
			listing.ServeHTTP(w, r)
			return
		}
		asked.Store(true)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(store.Close)
	t.Cleanup(func() { close(stop) }) // runs first: the handlers return, then the server closes
	return store.URL, asked
}

// interruptStartingProxy starts a recording proxy whose output folder is
// on the object store at storeURL, waits until the store was asked what
// the proxy reads at start (doing), sends it a Ctrl-C there and wants it
// to exit 130 soon after.
func interruptStartingProxy(t *testing.T, storeURL string, asked *atomic.Bool, doing string) {
	t.Helper()
	out := "s3://hone/proxied?endpoint=" + storeURL + "&use_path_style=true&disable_https=true&region=us-east-1"
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
		t.Fatalf("the proxy did not %s: %s", doing, stderr.String())
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
