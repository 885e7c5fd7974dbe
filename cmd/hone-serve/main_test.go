package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/cmd/internal/testbin"
	"github.com/hone-rl/hone/internal/waitfor"
)

// binary is the hone-serve binary TestMain builds, for the tests that run
// it as a process.
var binary string

func TestMain(m *testing.M) {
	testbin.Main(m, func(dir string) { binary = filepath.Join(dir, "hone-serve") }, ".")
}

// noEnv is an empty environment, so that the tests do not depend on the
// shell they run in.
func noEnv(string) string { return "" }

func TestHelpAndUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Example:", "hone-serve --model", "--kv-cache-bytes", "--adapters", "127.0.0.1", "--upstream", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True", "--enable-lora", "HONE_API_KEY", "HONE_UPSTREAM_API_KEY", "warning"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("--help lacks %q:\n%s", want, out.String())
		}
	}
	for _, args := range [][]string{{}, {"--model", "x", "extra"}, {"--bogus"},
		{"--model", "x", "--upstream", "http://127.0.0.1:1"}, {"--model", "x", "--upstream-api-key", "k"},
		{"--upstream", "http://127.0.0.1:1", "--dtype", "bfloat16"}, {"--model", "x", "--dtype", "int4"},
		// A malformed --upstream (no scheme, another scheme) is bad usage.
		{"--upstream", "localhost:8001"}, {"--upstream", "ftp://127.0.0.1:1"},
		// A port no socket can have is bad usage, found before the model
		// loads (the listen failing after it was exit 1).
		{"--model", "../../serve/testdata/tiny", "--port", "70000"}, {"--upstream", "http://127.0.0.1:1", "--port", "-1"},
		// --poll-timeout bounds a poll of an object store: with a local
		// folder, which is watched, it would do nothing.
		{"--model", "../../serve/testdata/tiny", "--adapters", t.TempDir(), "--poll-timeout", "1m"}, {"--model", "x", "--poll-timeout", "0"}} {
		err := run(context.Background(), args, noEnv, io.Discard, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage {
			t.Fatalf("%q: %v (exit %d), want a usage error", args, err, cli.ExitCode(err))
		}
	}
	// A negative KV budget is refused before the model loads (it would
	// start and then refuse every request), naming the flag. (Were it
	// not, the server would serve until the deadline.)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := run(ctx, []string{"--model", "../../serve/testdata/tiny", "--kv-cache-bytes", "-1", "--port", "0"}, noEnv, io.Discard, &bytes.Buffer{})
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--kv-cache-bytes") {
		t.Fatalf("--kv-cache-bytes -1: %v (exit %d), want a usage error naming it", err, cli.ExitCode(err))
	}
	// Flags only the embedded engine reads are refused behind --upstream,
	// naming the flag, instead of being silently ignored.
	for _, e := range engineFlags {
		arg := "--" + e.flag
		switch e.flag {
		case "dtype":
			arg += "=bfloat16"
		case "served-model-name":
			arg += "=m"
		case "request-timeout":
			arg += "=1m"
		case "enable-prefix-caching", "no-enable-prefix-caching", "return-tokens-as-token-ids":
		default:
			arg += "=7"
		}
		err := run(context.Background(), []string{"--upstream", "http://127.0.0.1:1", arg}, noEnv, io.Discard, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--"+e.flag+" applies to --model") {
			t.Errorf("--upstream with %s: %v, want a usage error naming it", arg, err)
		}
	}
	if err := run(context.Background(), []string{"--model", t.TempDir()}, noEnv, io.Discard, &bytes.Buffer{}); cli.ExitCode(err) != cli.ExitUsage {
		t.Fatalf("empty model folder: %v (exit %d), want bad input", err, cli.ExitCode(err))
	}
	// The environment's upstream key is for --upstream: set for a whole
	// shell it does not make --model a usage error.
	env := func(k string) string { return map[string]string{upstreamKeyEnv: "s"}[k] }
	if err := run(context.Background(), []string{"--model", t.TempDir()}, env, io.Discard, &bytes.Buffer{}); err == nil || strings.Contains(err.Error(), "needs --upstream") {
		t.Fatalf("--model with %s set: %v, want only the empty folder refused", upstreamKeyEnv, err)
	}
}

// TestServeAndStop starts the real binary's run on a free port and stops it
// as a signal would: it drains and returns nil.
func TestServeAndStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log waitfor.Buffer
	go func() {
		done <- run(ctx, []string{"--model", "../../serve/testdata/tiny", "--port", "0", "--threads", "1"}, noEnv, io.Discard, &log)
	}()
	waitfor.Until(t, 20*time.Second, "the listening line", func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned before listening: %v\n%s", err, log.String())
		default:
		}
		return strings.Contains(log.String(), "listening")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

// TestBadModelFolderExits2: a model folder that is missing, empty, or has
// a broken config.json or no weights is bad input: the real binary exits
// 2, naming what is wrong, as the README's exit-code table says.
func TestBadModelFolderExits2(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	broken := filepath.Join(dir, "broken")
	noWeights := filepath.Join(dir, "no-weights")
	for _, d := range []string{empty, broken, noWeights} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(broken, "config.json"), []byte("{bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("../../serve/testdata/tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noWeights, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "config.json"},
		{empty, "config.json"},
		{broken, "config.json"},
		{noWeights, "safetensors"},
	} {
		cmd := exec.Command(binary, "--model", c.dir, "--port", "0", "--threads", "1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != cli.ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("--model %s: %v, stderr %q; want exit 2 naming %s", c.dir, err, stderr.String(), c.want)
		}
	}
}

// TestHostileTemplateRefused: a model folder whose chat template recurses
// without end on any conversation makes hone-serve exit 2 at start, with an
// error naming the template file, instead of dying on the first request.
func TestHostileTemplateRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS("../../serve/testdata/tiny")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "chat_template.jinja")
	if err := os.WriteFile(path, []byte(`{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	err := run(t.Context(), []string{"--model", dir, "--port", "0", "--threads", "1"}, noEnv, io.Discard, &log)
	if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "macro depth limit") {
		t.Fatalf("got %v (exit %d), want exit 2 naming %s\n%s", err, cli.ExitCode(err), path, log.String())
	}
}
