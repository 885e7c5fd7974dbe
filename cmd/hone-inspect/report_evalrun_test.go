package main

import (
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An eval row whose "run" names no run on the page is placed by the first
// run's time and token axes, and the page says so, naming the row: it
// used to be placed there silently, so a typo, or a run that the page
// names by its path because two folders share its name, moved the point
// along another run's time axis with no word.
func TestReportEvalOfAnotherRun(t *testing.T) {
	dir := t.TempDir()
	a, _, _ := writeNamedRun(t, dir, "lr-a", 4, 1e-5)
	b, _, _ := writeNamedRun(t, dir, "lr-b", 4, 3e-5)
	eval := filepath.Join(dir, "evals.jsonl")
	text := `{"label":"b","step":4,"run":"lr-b","success":0.5}` + "\n" + `{"label":"c","step":4,"run":"lr-c","success":0.7}` + "\n"
	if err := os.WriteFile(eval, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	mustRun(t, nil, "report", a, b, "--eval", eval, "-o", out)
	page, d := readPage(t, out)
	for _, c := range d.Charts {
		if c.ID == "eval-success" && (len(c.Lines) != 2 || c.Lines[0].Run != 1 || c.Lines[1].Run != 0) {
			t.Errorf("eval lines %+v: want b on run 1 (lr-b), c on run 0", c.Lines)
		}
	}
	want := eval + `:2: eval row of run "lr-c", which is not on this page (lr-a, lr-b): its time and token axes are those of lr-a.`
	if !strings.Contains(html.UnescapeString(page), want) {
		t.Errorf("page lacks the note %q", want)
	}
	if strings.Contains(html.UnescapeString(page), `"lr-b", which is not on this page`) {
		t.Errorf("page says that lr-b, which it shows, is not on it")
	}
}
