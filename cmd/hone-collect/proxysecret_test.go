package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProxyUpstreamSecretMasked: hone-collect proxy logged --upstream as
// given when it started listening, a password or a token in its userinfo
// included, named it so in the refusal of an upstream that is the proxy
// itself, and answered an agent's call to an unreachable upstream with
// net/http's error, which masks a password but not a token user. All
// three show the URL masked now.
func TestProxyUpstreamSecretMasked(t *testing.T) {
	const secret = "s3cr3tpw"
	for _, userinfo := range []string{"hone:" + secret, secret} {
		t.Run("listening, "+userinfo, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy", "--upstream", "http://"+userinfo+"@127.0.0.1:1/v1",
				"--listen", "127.0.0.1:0", "-o", t.TempDir())
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Signal(syscall.SIGTERM)
			sc := bufio.NewScanner(stderr)
			re := regexp.MustCompile(`proxy listening.*addr=(\S+)`)
			var addr string
			for addr == "" && sc.Scan() {
				line := sc.Text()
				if strings.Contains(line, secret) {
					t.Errorf("stderr shows the secret: %s", line)
				}
				if m := re.FindStringSubmatch(line); m != nil {
					addr = m[1]
					if !strings.Contains(line, "xxxxx@127.0.0.1:1") {
						t.Errorf("the listening line does not name the upstream, masked: %s", line)
					}
				}
			}
			go io.Copy(io.Discard, stderr)
			if addr == "" {
				t.Fatal("proxy exited before listening")
			}
			client := &http.Client{Timeout: 30 * time.Second}
			resp, err := client.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), secret) || !strings.Contains(string(body), "@127.0.0.1:1/") {
				t.Errorf("answer %d %s, want a 502 naming the upstream, masked", resp.StatusCode, body)
			}
		})
	}
	t.Run("itself", func(t *testing.T) {
		port := freePort(t)
		cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy", "--upstream", fmt.Sprintf("http://hone:%s@127.0.0.1:%d/v1", secret, port),
			"--listen", fmt.Sprintf("127.0.0.1:%d", port), "-o", t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("exit %v, want 2: %s", err, out)
		}
		if strings.Contains(string(out), secret) || !strings.Contains(string(out), "hone:xxxxx@") {
			t.Errorf("the refusal does not show the upstream, masked: %s", out)
		}
	})
}

// TestProxyUpstreamCredentialsWarned: credentials in --upstream's userinfo
// go upstream as Basic auth only with an agent request that carries no
// Authorization of its own, which OpenAI clients always send, and never
// with --api-key, whose Bearer replaces them: an upstream that needs them
// answered 401 with no word of why. The proxy warns once as it starts,
// masked, to give the key with --api-key.
func TestProxyUpstreamCredentialsWarned(t *testing.T) {
	const secret = "s3cr3tpw"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no --api-key", nil, "only with an agent request that carries no Authorization"},
		{"--api-key", []string{"--api-key", "k"}, "are not sent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"proxy", "--upstream", "http://hone:" + secret + "@127.0.0.1:1/v1", "--listen", "127.0.0.1:0", "-o", t.TempDir()}, c.args...)
			cmd := exec.Command(filepath.Join(binDir, "hone-collect"), args...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Signal(syscall.SIGTERM)
			sc := bufio.NewScanner(stderr)
			var before []string
			for sc.Scan() && !strings.Contains(sc.Text(), "proxy listening") {
				before = append(before, sc.Text())
			}
			go io.Copy(io.Discard, stderr)
			got := strings.Join(before, "\n")
			if strings.Contains(got, secret) || strings.Count(got, c.want) != 1 || !strings.Contains(got, "--api-key") {
				t.Errorf("before listening: %q; want one warning saying %q, naming --api-key, the password masked", got, c.want)
			}
		})
	}
}
