package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestUpstreamSecretMasked: hone-serve logged --upstream as given when it
// started listening in front of vLLM, a password or a token in its
// userinfo included, named it so in the usage error of a URL that is no
// http(s) one, and a failed adapter load named a token user whole
// (net/http masks a password only). All show the URL masked now.
func TestUpstreamSecretMasked(t *testing.T) {
	const secret = "s3cr3tpw"
	t.Run("not http", func(t *testing.T) {
		cmd := exec.Command(binary, "--upstream", "ftp://hone:"+secret+"@127.0.0.1:1", "--port", "0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != cli.ExitUsage {
			t.Fatalf("exit %v, want %d: %s", err, cli.ExitUsage, stderr.String())
		}
		if strings.Contains(stderr.String(), secret) || !strings.Contains(stderr.String(), "hone:xxxxx@") {
			t.Errorf("the usage error does not show the URL, masked: %s", stderr.String())
		}
	})
	for name, userinfo := range map[string]string{"password": "hone:" + secret, "token": secret} {
		t.Run(name, func(t *testing.T) {
			adapters := filepath.Join(t.TempDir(), "adapters")
			step := filepath.Join(adapters, "myrun", "step-000003")
			if err := os.MkdirAll(step, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(step, "adapter_config.json"), []byte(`{"r":8,"lora_alpha":16,"target_modules":["q_proj"],"peft_type":"LORA"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(step, "adapter_model.safetensors"), []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      "), 0o644); err != nil {
				t.Fatal(err)
			}
			// Nothing listens on port 1: the step's load fails at once.
			cmd := exec.Command(binary, "--upstream", "http://"+userinfo+"@127.0.0.1:1", "--adapters", adapters,
				"--port", "0", "--poll-interval", "50ms")
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
			var listening, load bool
			for !(listening && load) && sc.Scan() {
				line := sc.Text()
				if strings.Contains(line, secret) {
					t.Errorf("stderr shows the secret: %s", line)
				}
				if strings.Contains(line, "listening") {
					listening = true
					if !strings.Contains(line, "xxxxx@127.0.0.1:1") {
						t.Errorf("the listening line does not show the upstream, masked: %s", line)
					}
				}
				load = load || strings.Contains(line, "loading myrun@3")
			}
			go io.Copy(io.Discard, stderr)
			if !listening || !load {
				t.Fatalf("hone-serve exited before it logged its listening line (%v) and the failed load (%v)", listening, load)
			}
		})
	}
}
