package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestProxyRefusesItselfAsUpstream: docs/proxy.md has the agent export
// OPENAI_BASE_URL=http://127.0.0.1:8100/v1, and --upstream defaults to
// that variable, so a proxy started in the same shell without --upstream
// forwarded every request to itself, each one opening another connection
// to itself until the process ran out of file descriptors ("accept4: too
// many open files"), while the agent's call hung. It is refused at start
// (exit 2), naming the variable, whichever name the URL gives the address.
func TestProxyRefusesItselfAsUpstream(t *testing.T) {
	for _, tc := range []struct{ name, listenHost, upstreamHost string }{
		{"same address", "127.0.0.1", "127.0.0.1"},
		{"localhost", "127.0.0.1", "localhost"},
		{"all interfaces", "0.0.0.0", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			upstream := fmt.Sprintf("http://%s:%d/v1", tc.upstreamHost, port)
			cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy",
				"-o", t.TempDir(), "--listen", net.JoinHostPort(tc.listenHost, fmt.Sprint(port)))
			cmd.Env = append(cmd.Environ(), "OPENAI_BASE_URL="+upstream)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			var exited atomic.Bool
			errc := make(chan error, 1)
			go func() { errc <- cmd.Wait(); exited.Store(true) }()
			if !waitfor.Within(20*time.Second, exited.Load) {
				t.Fatalf("the proxy started with itself as upstream %s and still runs 20s later: %s", upstream, stderr.String())
			}
			var ee *exec.ExitError
			if err := <-errc; !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2: %s", err, stderr.String())
			}
			for _, want := range []string{upstream, "$OPENAI_BASE_URL", "this proxy itself", "--upstream"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not name %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// freePort returns a TCP port nothing listens on just now: the kernel's
// pick for 127.0.0.1:0, released for the process under test to take.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestProxyRefusedLeavesNoFolder: the self-upstream refusal came after
// the -o folder was made, so a refused start left an empty folder (and
// the parents it made) behind, as if the proxy had run. A refused start
// removes the folders it made while they are empty; a folder that was
// there before stays. So does a start that cannot listen (a busy port).
func TestProxyRefusedLeavesNoFolder(t *testing.T) {
	refuse := func(t *testing.T, out string) {
		t.Helper()
		port := freePort(t)
		upstream := fmt.Sprintf("http://127.0.0.1:%d/v1", port)
		cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy",
			"-o", out, "--upstream", upstream, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		var ee *exec.ExitError
		if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("exit %v, want 2: %s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "this proxy itself") {
			t.Fatalf("stderr does not say the upstream is the proxy itself:\n%s", stderr.String())
		}
	}
	t.Run("made", func(t *testing.T) {
		root := t.TempDir()
		refuse(t, filepath.Join(root, "runs", "out"))
		if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
			t.Fatalf("after a refused start %s holds %v (err %v), want nothing", root, ents, err)
		}
	})
	t.Run("busy port", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		root := t.TempDir()
		cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy", "-o", filepath.Join(root, "out"),
			"--upstream", fmt.Sprintf("http://127.0.0.1:%d/v1", freePort(t)), "--listen", ln.Addr().String())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "address already in use") {
			t.Fatalf("exit %v, want a failure naming the busy address: %s", err, stderr.String())
		}
		if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
			t.Fatalf("after a start on a busy port %s holds %v (err %v), want nothing", root, ents, err)
		}
	})
	t.Run("existing", func(t *testing.T) {
		out := t.TempDir()
		refuse(t, out)
		if _, err := os.Stat(out); err != nil {
			t.Fatalf("the folder that was there before the refused start: %v", err)
		}
	})
}
