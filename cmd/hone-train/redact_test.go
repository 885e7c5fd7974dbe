package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
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
