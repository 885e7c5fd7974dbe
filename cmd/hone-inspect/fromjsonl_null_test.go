package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A null metric in a JSON Lines file is left out of the row, with one
// warning for the file naming its first such line, as hone-collect's
// stdio environment and proxy leave one out; from-jsonl refused the file.
func TestFromJSONLNullMetric(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	text := `{"trajectory_id":"a","group_id":"g","reward":1,"messages":[{"role":"user","content":"hi"}],"metrics":{"turns":1}}` + "\n" +
		`{"trajectory_id":"b","group_id":"g","reward":0,"messages":[{"role":"user","content":"ho"}],"metrics":{"turns":2,"overlap":null}}` + "\n" +
		`{"trajectory_id":"c","group_id":"g","reward":0,"messages":[{"role":"user","content":"he"}],"metrics":{"overlap":null}}` + "\n"
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "chats.parquet")
	r := mustRun(t, nil, "from-jsonl", "-o", out, in)
	if n := strings.Count(r.stderr, "is null"); n != 1 || !strings.Contains(r.stderr, in+":2: metric") || !strings.Contains(r.stderr, "overlap") {
		t.Errorf("stderr:\n%s\nwant one warning naming %s:2 and the metric overlap", r.stderr, in)
	}
	groups := readAll(t, out)
	if len(groups) != 1 || len(groups[0].Trajectories) != 3 {
		t.Fatalf("groups %+v", groups)
	}
	if m := groups[0].Trajectories[1].Metrics; len(m) != 1 || m["turns"] != 2 {
		t.Errorf("b's metrics %v; want turns 2 alone", m)
	}
}
