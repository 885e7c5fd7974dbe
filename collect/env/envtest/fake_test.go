package envtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/format/trajectory"
)

func TestFake(t *testing.T) { envtest.Suite(t, envtest.Fake{}, envtest.SuiteOptions{}) }

// broken is Fake with one fault, named by HONE_ENVTEST_BROKEN.
type broken struct {
	envtest.Fake
	fault    string
	episodes *atomic.Int64 // episodes started, shared as a global source would be
}

func (b broken) NewEpisode(ctx context.Context, sc env.Scenario, seed int64) (env.Episode, error) {
	ep, err := b.Fake.NewEpisode(ctx, sc, seed)
	if err != nil {
		return nil, err
	}
	return &brokenEpisode{Episode: ep, fault: b.fault, n: b.episodes.Add(1)}, nil
}

type brokenEpisode struct {
	env.Episode
	fault string
	n     int64
}

func (b *brokenEpisode) Reset(ctx context.Context) (env.Observation, error) {
	obs, err := b.Episode.Reset(ctx)
	if b.fault == "unseeded" {
		// Randomness that does not come from the episode's seed.
		obs.Messages = append(obs.Messages, env.User(fmt.Sprintf("hint: %d", b.n%3)))
	}
	return obs, err
}

func (b *brokenEpisode) Step(ctx context.Context, turn env.Turn) (env.Feedback, error) {
	fb, err := b.Episode.Step(ctx, turn)
	if b.fault == "no-results" {
		// Forgets to answer tool calls, and the game goes on.
		var kept []trajectory.Message
		for _, m := range fb.Messages {
			if m.Role != "tool" {
				kept = append(kept, m)
			}
		}
		fb.Messages = kept
	}
	return fb, err
}

// TestSuiteCatchesBrokenEnvs runs the suite, in a process of its own, on
// environments that break Env's contract and checks that it fails them,
// saying why: one whose episodes depend on something other than their
// seed, and one that leaves well-formed calls without a result (Play
// answers those itself, so a broken environment passed).
func TestSuiteCatchesBrokenEnvs(t *testing.T) {
	if fault := os.Getenv("HONE_ENVTEST_BROKEN"); fault != "" {
		envtest.Suite(t, broken{fault: fault, episodes: new(atomic.Int64)}, envtest.SuiteOptions{})
		return
	}
	for fault, want := range map[string]string{
		"unseeded":   "a second play differs",
		"no-results": `without a result for call "call_1" (lookup)`,
	} {
		t.Run(fault, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteCatchesBrokenEnvs$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HONE_ENVTEST_BROKEN="+fault)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), want) {
				t.Errorf("suite on a %s environment: %v, want a failure saying %q:\n%s", fault, err, want, out)
			}
		})
	}
}
