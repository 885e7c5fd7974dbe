package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A JSON Lines file that starts with a UTF-8 byte-order mark (as Windows
// tools and Excel's "CSV UTF-8" exports write) is read: its first line was
// refused as "invalid character 'ï' looking for beginning of value".
func TestFromJSONLByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	text := "\ufeff" + `{"trajectory_id":"a","group_id":"g","reward":1,"messages":[{"role":"user","content":"hi"}]}` + "\r\n" +
		`{"trajectory_id":"b","group_id":"g","reward":0,"messages":[{"role":"user","content":"ho"}]}` + "\r\n"
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "chats.parquet")
	mustRun(t, nil, "from-jsonl", "-o", out, in)
	groups := readAll(t, out)
	if len(groups) != 1 || len(groups[0].Trajectories) != 2 || groups[0].Trajectories[0].ID != "a" {
		t.Fatalf("groups %+v", groups)
	}
}
