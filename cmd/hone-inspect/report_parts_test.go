package main

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// A message whose content has parts that are not text (an image, a file)
// says so on the page: the page shows a message's text alone, and an
// image-only question used to show as an empty box, as if the user had
// sent nothing.
func TestReportSaysContentPartsNotShown(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "adapters", "r1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(`{"step":1,"loss":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := `{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}`
	var g trajectory.Group
	for k, parts := range []string{`[{"type":"text","text":"What is in it?"},` + img + `]`, `[` + img + `,` + img + `,{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}}]`} {
		r := float64(k)
		text, _ := strings.CutPrefix(parts, `[{"type":"text","text":"`)
		text, _, _ = strings.Cut(text, `"}`)
		if k == 1 {
			text = ""
		}
		g.Trajectories = append(g.Trajectories, trajectory.Trajectory{Run: "r1", Step: 1, Adapter: "r1@1", GroupID: "g1", ID: "e" + string(rune('0'+k)), Reward: &r,
			Messages: []trajectory.Message{{Role: "user", Content: text, ContentParts: parts}, {Role: "assistant", Content: "a cat"}}})
	}
	g.ID = "g1"
	traj := filepath.Join(dir, "t.parquet")
	if err := trajectory.WriteFile(context.Background(), traj, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	mustRun(t, nil, "report", run, "--trajectories", traj, "-o", out)
	page, _ := readPage(t, out)
	page = html.UnescapeString(page)
	for _, frag := range []string{
		`<pre class="content">What is in it?</pre><p class="parts">1 content part not shown: image_url</p>`,
		`<p class="parts">3 content parts not shown: 2 image_url, 1 input_audio</p>`,
	} {
		if !strings.Contains(page, frag) {
			t.Errorf("page lacks %q", frag)
		}
	}
}
