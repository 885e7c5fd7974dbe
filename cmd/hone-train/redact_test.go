package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestObjectStoreLogHidesEndpointPassword: a store reached by an endpoint
// that carries a user and password (http://user:PASSWORD@minio:9000;
// the password is not sent, the keys come from AWS_*) has the
// password masked in the log that names the store. "published to=…"
// printed the --out URL whole into every training pod's log.
func TestObjectStoreLogHidesEndpointPassword(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	local := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, local, "r1")
	uploadScored(t, s3, local, "r1.parquet")
	const secret = "PWSECRET77"
	withUser := func(u string) string {
		return strings.Replace(u, "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	}
	var log bytes.Buffer
	args := []string{"grpo", "--model", md, "--out", withUser(s3.URL("hone", "adapters")), "--run", "cron",
		"--watch-dir", withUser(s3.URL("hone", "scored/")), "--rank", "2", "--threads", "1", "--out-cache", filepath.Join(dir, "cache")}
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, log.String())
	}
	if !strings.Contains(log.String(), "published") {
		t.Fatalf("no publish logged:\n%s", log.String())
	}
	if strings.Contains(log.String(), secret) {
		t.Errorf("the log prints the endpoint's password:\n%s", log.String())
	}
}

// TestRunConfigHidesEndpointPassword: train_config.json, kept in the run
// folder, published to the store and shown by hone-inspect report,
// records --out and the inputs with the endpoint's password masked; a
// resume whose URLs carry another password (rotated) is the same run, on
// the same session of files, not a changed --out.
func TestRunConfigHidesEndpointPassword(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	local := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, local, "r1")
	uploadScored(t, s3, local, "r1.parquet")
	withUser := func(u, pw string) string {
		return strings.Replace(u, "endpoint=http://", "endpoint=http://me:"+pw+"@", 1)
	}
	cache := filepath.Join(dir, "cache")
	grpo := func(pw string, extra ...string) string {
		t.Helper()
		var log bytes.Buffer
		args := append([]string{"grpo", "--model", md, "--out", withUser(s3.URL("hone", "adapters"), pw), "--run", "r",
			"--rank", "2", "--threads", "1", "--out-cache", cache}, extra...)
		args = append(args, withUser(s3.URL("hone", "scored/r1.parquet"), pw))
		if err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, log.String())
		}
		return log.String()
	}
	const secret, rotated = "PWSECRET77", "PWROTATED88"
	grpo(secret, "--steps", "1")
	cfg, err := fileset.ReadFile(context.Background(), s3.URL("hone", "adapters/r/step-000001/train_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), secret) || !strings.Contains(string(cfg), "me:REDACTED@") {
		t.Errorf("published train_config.json records the endpoint's password:\n%s", cfg)
	}
	log := grpo(rotated, "--resume", "--steps", "2")
	if strings.Contains(log, "new session") || strings.Contains(log, "session 1") {
		t.Errorf("a resume on the same files under another password began a new session:\n%s", log)
	}
	cfg, err = os.ReadFile(filepath.Join(cache, "r", "step-000002", "train_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), rotated) {
		t.Errorf("step 2's train_config.json records the endpoint's password:\n%s", cfg)
	}
}
