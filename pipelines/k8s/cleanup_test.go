package k8s

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// A finished round leaves nothing behind for ever. Without podGC and a
// ttlStrategy every round's pods (a collect and a score pod per shard, the
// train and wait pods) and its Workflow stayed in the namespace until
// someone deleted them. round.yaml deletes each pod once it succeeds
// (OnPodSuccess: a failed step's pod, and its log, stay for debugging
// until its Workflow goes; OnWorkflowCompletion would take them with the
// rest), and each Workflow a while after it ends, a failed one later than
// a succeeded one (or one that ended in Error). docs/cluster.md says how long each is kept.
func TestRoundCleansUpAfterItself(t *testing.T) {
	b, err := os.ReadFile("round.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wt struct {
		Spec struct {
			PodGC struct {
				Strategy string `json:"strategy"`
			} `json:"podGC"`
			TTLStrategy struct {
				SecondsAfterSuccess    *int `json:"secondsAfterSuccess"`
				SecondsAfterFailure    *int `json:"secondsAfterFailure"`
				SecondsAfterCompletion *int `json:"secondsAfterCompletion"`
			} `json:"ttlStrategy"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &wt); err != nil {
		t.Fatalf("round.yaml: %v", err)
	}
	gc, ttl := wt.Spec.PodGC, wt.Spec.TTLStrategy
	if gc.Strategy != "OnPodSuccess" {
		t.Errorf("round.yaml: podGC strategy %q, want OnPodSuccess (succeeded pods go at once, failed ones stay with their Workflow)", gc.Strategy)
	}
	// Argo's secondsAfterFailure covers the Failed phase only: a
	// Workflow that ends in Error (a pod deleted under it, a controller
	// error) falls to secondsAfterCompletion, and without it stays.
	s, f, c := ttl.SecondsAfterSuccess, ttl.SecondsAfterFailure, ttl.SecondsAfterCompletion
	if s == nil || f == nil || c == nil || *s <= 0 || *f < *s || *c != *f {
		out, _ := yaml.Marshal(ttl)
		t.Fatalf("round.yaml: ttlStrategy %s: want secondsAfterSuccess, a secondsAfterFailure no shorter, and secondsAfterCompletion (an Error) the same as it", out)
	}
	b, err = os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	m := regexp.MustCompile("A round's Workflow is deleted (\\d+) days? after it succeeds and (\\d+) days? after it fails or ends in error").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/cluster.md no longer says how long a round's Workflow is kept")
	}
	for i, got := range []int{*ttl.SecondsAfterSuccess, *ttl.SecondsAfterFailure} {
		if days, _ := strconv.Atoi(m[i+1]); days*86400 != got {
			t.Errorf("docs/cluster.md keeps a round's Workflow %s days; round.yaml's ttlStrategy says %d s", m[i+1], got)
		}
	}
}
