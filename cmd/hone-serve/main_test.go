package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/cmd/internal/testbin"
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
	if err := run(context.Background(), []string{"--help"}, noEnv, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Example:", "hone-serve --model", "--kv-cache-bytes", "--adapters", "127.0.0.1", "--upstream", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True", "--enable-lora", "HONE_API_KEY", "HONE_UPSTREAM_API_KEY", "warning"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("--help lacks %q:\n%s", want, out.String())
		}
	}
	for _, args := range [][]string{{}, {"--model", "x", "extra"}, {"--bogus"},
		{"--model", "x", "--upstream", "http://127.0.0.1:1"}, {"--model", "x", "--upstream-api-key", "k"},
		{"--upstream", "http://127.0.0.1:1", "--dtype", "bfloat16"}, {"--model", "x", "--dtype", "int4"}} {
		err := run(context.Background(), args, noEnv, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage {
			t.Fatalf("%q: %v (exit %d), want a usage error", args, err, cli.ExitCode(err))
		}
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
		case "enable-prefix-caching", "no-enable-prefix-caching":
		default:
			arg += "=7"
		}
		err := run(context.Background(), []string{"--upstream", "http://127.0.0.1:1", arg}, noEnv, &bytes.Buffer{})
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--"+e.flag+" applies to --model") {
			t.Errorf("--upstream with %s: %v, want a usage error naming it", arg, err)
		}
	}
	if err := run(context.Background(), []string{"--model", t.TempDir()}, noEnv, &bytes.Buffer{}); err == nil || cli.ExitCode(err) == cli.ExitOK {
		t.Fatalf("empty model folder: %v", err)
	}
	// The environment's upstream key is for --upstream: set for a whole
	// shell it does not make --model a usage error.
	env := func(k string) string { return map[string]string{upstreamKeyEnv: "s"}[k] }
	if err := run(context.Background(), []string{"--model", t.TempDir()}, env, &bytes.Buffer{}); err == nil || strings.Contains(err.Error(), "needs --upstream") {
		t.Fatalf("--model with %s set: %v, want only the empty folder refused", upstreamKeyEnv, err)
	}
}

// TestServeAndStop starts the real binary's run on a free port and stops it
// as a signal would: it drains and returns nil.
func TestServeAndStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log bytes.Buffer
	go func() {
		done <- run(ctx, []string{"--model", "../../serve/testdata/tiny", "--port", "0", "--threads", "1"}, noEnv, &log)
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if !strings.Contains(log.String(), "listening") {
		t.Fatalf("log lacks the listening line:\n%s", log.String())
	}
}
