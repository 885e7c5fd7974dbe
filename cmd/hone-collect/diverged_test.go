package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/train/model/modeltest"
)

// Against the real hone-serve serving a diverged adapter: every episode
// fails at its first turn with hone-serve's 500 (logits_not_finite), which
// is not retried, though --retries is left at its default of 4 (the same
// weights give the same NaN; the backoff would add seconds to every
// episode), and the episodes' errors and the run's summary carry the
// server's words rather than the bare status.
func TestDivergedAdapterServe(t *testing.T) {
	const modelDir = "../../serve/testdata/tiny"
	adapters := t.TempDir()
	modeltest.WriteDivergedRun(t, modelDir, adapters, "r1")
	addr := openaitest.StartProcess(t, filepath.Join(binDir, "hone-serve"), "--model", modelDir, "--adapters", adapters, "--port", "0", "--threads", "1")
	out := filepath.Join(t.TempDir(), "out.parquet")
	r := collectBin(t, "--env", "guess", "--groups", "2", "-G", "2", "--model", "r1", "--base-url", "http://"+addr+"/v1",
		"--max-tokens", "4", "--temperature", "1", "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "every episode failed (4 of 4)") || !strings.Contains(r.stderr, "logits_not_finite") ||
		!strings.Contains(r.stderr, "NaN") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, g := range read(t, out) {
		for _, tr := range g.Trajectories {
			if !strings.Contains(tr.Error, `HTTP 500 logits_not_finite: no token could be chosen`) || !strings.Contains(tr.Error, `model "r1@1" gave NaN`) {
				t.Errorf("%s: error %q", tr.ID, tr.Error)
			}
		}
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`hone_serve_requests_total{endpoint="chat",status="500"} 4` + "\n", `hone_serve_no_token_errors_total{code="logits_not_finite"} 4` + "\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("hone-serve's /metrics lacks %q (one call per episode, none repeated):\n%s", want, b)
		}
	}
}
