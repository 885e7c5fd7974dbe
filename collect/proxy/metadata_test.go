package proxy_test

import (
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestProxyRewardKeepsTrajectoryMetadata: an agent ported from ART keeps
// per-trajectory metadata (ART's Trajectory(metadata=…)), but the reward
// route refused a "metadata" key as unknown, so it had nowhere to go but
// the group's. The reward's metadata is now written to the row's own
// metadata column, beside the chat template kwargs the proxy recorded and
// apart from the group's; values are read as close reads them (numbers
// and booleans as their JSON text, null left out).
func TestProxyRewardKeepsTrajectoryMetadata(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	const conv = `{"model":"agent","messages":[{"role":"user","content":"Weather in Oslo?"}]`
	if status, msg := chat(t, base, conv+`,"chat_template_kwargs":{"enable_thinking":false}}`, "t1", "g"); status != http.StatusOK {
		t.Fatalf("t1: %d %s", status, msg)
	}
	if status, msg := chat(t, base, conv+`}`, "t2", "g"); status != http.StatusOK {
		t.Fatalf("t2: %d %s", status, msg)
	}
	for _, tc := range []struct{ tid, body string }{
		{"t1", `{"reward":1,"metadata":{"judge":"exact","level":3,"solved":true,"note":null}}`},
		{"t2", `{"reward":0,"metadata":{"judge":"fuzzy"}}`},
	} {
		if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/trajectories/"+tc.tid+"/reward", tc.body)); status != http.StatusNoContent {
			t.Fatalf("reward %s: %d %s", tc.tid, status, msg)
		}
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, base+"/hone/groups/g/close", `{"metadata":{"scenario":"s1"}}`)); status != http.StatusNoContent {
		t.Fatalf("close: %d %s", status, msg)
	}
	gs := readOut(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("groups %+v; want g of two trajectories", gs)
	}
	want := map[string]map[string]string{
		"t1": {"judge": "exact", "level": "3", "solved": "true", trajectory.MetadataKeyChatTemplateKwargs: `{"enable_thinking":false}`},
		"t2": {"judge": "fuzzy"},
	}
	for _, tr := range gs[0].Trajectories {
		if !maps.Equal(tr.Metadata, want[tr.ID]) {
			t.Errorf("%s: metadata %v; want %v", tr.ID, tr.Metadata, want[tr.ID])
		}
	}
	if !maps.Equal(gs[0].Metadata, map[string]string{"scenario": "s1"}) {
		t.Errorf("group metadata %v; want the close body's scenario alone", gs[0].Metadata)
	}
}

// TestProxyRewardBadMetadataNamed: reward metadata the row cannot hold (a
// value that is not a string, number, boolean or null) or that would
// overwrite what Hone's stages record (a key beginning "hone.", such as
// the chat template kwargs training lays the row out under) is a 400
// naming the key, and the trajectory stays open for a corrected POST.
func TestProxyRewardBadMetadataNamed(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "t1", "g")
	url := base + "/hone/trajectories/t1/reward"
	for _, tc := range []struct{ body, key, why string }{
		{`{"reward":1,"metadata":{"judge":"exact","tags":["a"]}}`, "tags", "not a scalar"},
		{`{"reward":1,"metadata":{"hone.chat_template_kwargs":"{}"}}`, "hone.chat_template_kwargs", "reserved"},
	} {
		status, msg := do(t, mustRequest(t, http.MethodPost, url, tc.body))
		if status != http.StatusBadRequest || !strings.Contains(msg, `metadata \"`+tc.key+`\"`) {
			t.Errorf("%s: %d %s; want 400 naming metadata %q", tc.why, status, msg, tc.key)
		}
	}
	if status, msg := do(t, mustRequest(t, http.MethodPost, url, `{"reward":1,"metadata":{"judge":"exact"}}`)); status != http.StatusNoContent {
		t.Fatalf("corrected reward: %d %s", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	if tr.Reward == nil || *tr.Reward != 1 || !maps.Equal(tr.Metadata, map[string]string{"judge": "exact"}) {
		t.Errorf("recorded reward %v, metadata %v; want 1 and judge exact", tr.Reward, tr.Metadata)
	}
}
