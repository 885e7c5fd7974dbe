package demotest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeRound returns the commands of the README's "A round by hand": the
// first ```sh block after the paragraph that starts with that phrase.
func readmeRound(t *testing.T, readme string) string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\nA round by hand")
	if !ok {
		t.Fatalf("%s has no paragraph starting %q", readme, "A round by hand")
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: no ```sh block after \"A round by hand\"", readme)
	}
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("%s: the round-by-hand block is not closed", readme)
	}
	return block
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestReadmeRoundByHand runs the README's round by hand as it is written,
// in a fresh folder whose bin/ holds the binaries just built: `make build`
// is left out (built here instead) and port 8000 becomes a free port.
// The rounds must move the mean reward: the last round's, sampled by the
// GRPO run, at least 0.3 above the first's, sampled by the warm-up.
func TestReadmeRoundByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary, warms a model up and runs 8 GRPO rounds (about a minute)")
	}
	need(t, "curl")
	need(t, "bash")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	block := readmeRound(t, filepath.Join(root, "README.md"))
	var script []string
	for _, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "make build" {
			continue
		}
		script = append(script, line)
	}
	src := strings.Join(script, "\n")
	if !strings.Contains(src, "8000") {
		t.Fatalf("the README's round by hand no longer uses port 8000; update this test:\n%s", src)
	}
	src = strings.ReplaceAll(src, "8000", fmt.Sprint(freePort(t)))

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	work := t.TempDir()
	buildBinaries(ctx, t, root, filepath.Join(work, "bin"))
	// Stop on the first failing command, and never leave the server behind.
	src = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + src
	start := time.Now()
	cmd := scriptCmd(ctx, t, "bash", "-c", src)
	cmd.Dir = work
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out.String())
	}
	t.Logf("the README's round by hand took %s", time.Since(start).Round(time.Second))

	mean := func(file string) float64 {
		t.Helper()
		b, err := exec.CommandContext(ctx, filepath.Join(work, "bin", "hone-inspect"), "stats", "--json", filepath.Join(work, file)).Output()
		if err != nil {
			t.Fatalf("hone-inspect stats %s: %v", file, err)
		}
		var s struct {
			Reward struct {
				Scored int      `json:"scored"`
				Mean   *float64 `json:"mean"`
			} `json:"reward"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.Reward.Mean == nil || s.Reward.Scored != 128 {
			t.Fatalf("stats of %s: %v\n%s", file, err, b)
		}
		return *s.Reward.Mean
	}
	var means []string
	for r := 1; r <= 8; r++ {
		means = append(means, fmt.Sprintf("%.2f", mean(fmt.Sprintf("out/r%d.scored.parquet", r))))
	}
	first, last := mean("out/r1.scored.parquet"), mean("out/r8.scored.parquet")
	t.Logf("mean reward by round: %s", strings.Join(means, " "))
	if last < first+0.3 {
		t.Errorf("mean reward %.3f in round 1, %.3f in round 8: want a rise of at least 0.3\n%s", first, last, out.String())
	}
	// The stats table the README ends on shows the reward by sampling
	// step: the warm-up's step 60, then steps 1..7 of the GRPO run.
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	steps := map[string]bool{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 2 && f[0] == "step" {
			steps[f[1]] = true
		}
	}
	for _, s := range []string{"60", "1", "7"} {
		if !steps[s] {
			t.Errorf("the stats table has no row for step %s:\n%s", s, out.String())
		}
	}
	// Every round after the first was a new session of run "rl".
	b, err := os.ReadFile(filepath.Join(work, "out", "adapters", "rl", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Sessions []struct {
			Index     int `json:"index"`
			StartStep int `json:"start_step"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(b, &man); err != nil || len(man.Sessions) != 8 || man.Sessions[7].Index != 7 || man.Sessions[7].StartStep != 7 {
		t.Errorf("run rl's manifest: %v\n%s", err, b)
	}
}
