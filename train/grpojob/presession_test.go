package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/train/checkpoint"
)

// TestPreSessionStepResumedUnderRotatedPassword: a step saved before
// sessions were recorded (no "extra" in its trainer_state.json, the
// inputs in its train_config.json as written, endpoint password and all)
// is continued by a --resume on the same object under a rotated endpoint
// password, as a run with sessions is: the names are compared with their
// passwords masked on both sides. They were compared as written, so the
// rotated password began a new session of the same files.
func TestPreSessionStepResumedUnderRotatedPassword(t *testing.T) {
	dir, md, s := objectFixture(t)
	name := "s3://bkt/in/a.parquet" + withEndpointPassword(t, s.query)
	writeGroups(t, md, name, 2, 3, varied)
	o := baseOptions(md, dir, "r", name)
	o.GroupsPerStep, o.Steps = 1, 1
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	// Step 1 as a Hone before sessions saved it.
	run := &checkpoint.Run{Dir: filepath.Join(dir, "r")}
	editJSON(t, filepath.Join(run.StepDir(1), checkpoint.StateName), func(m map[string]any) { delete(m, "extra") })
	editJSON(t, filepath.Join(run.StepDir(1), checkpoint.ConfigName), func(m map[string]any) { m["inputs"] = []string{name} })
	rotated := strings.Replace(name, endpointSecret, "PW5rotated", 1)
	o = baseOptions(md, dir, "r", rotated)
	o.GroupsPerStep, o.Steps, o.Resume = 1, 2, true
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("the resume: %v\n%s", err, log.String())
	}
	if strings.Contains(log.String(), "new session") {
		t.Errorf("a resume of a pre-session step on the same object under a rotated password began a new session:\n%s", log.String())
	}
}

// editJSON rewrites the JSON object in file p with edit.
func editJSON(t *testing.T, p string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
