package report

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// browserHook is put into the page under test, before its own script: it
// records every script error and console.error or console.warn, then
// after load what each chart drew, the hover box over the first point of
// the reward chart, the charts again with smoothing on and tokens as the
// x axis, then wall time as the x axis, and which rollout shows after choosing the first step. The
// record goes into the DOM as JSON, which --dump-dom returns.
const browserHook = `<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push('error: ' + e.message + ' at ' + e.filename + ':' + e.lineno); });
  ['error', 'warn'].forEach(function (k) {
    var orig = console[k];
    console[k] = function () { errors.push('console.' + k + ': ' + Array.prototype.join.call(arguments, ' ')); orig.apply(console, arguments); };
  });
  function snap() {
    var out = {};
    document.querySelectorAll('figure.chart').forEach(function (f) {
      out[f.id] = { drawn: Number(f.dataset.drawn || 0), lines: f.querySelectorAll('path.line').length,
        points: f.querySelectorAll('circle.point').length, raw: f.querySelectorAll('path.raw').length,
        xticks: f.dataset.xticks || '', legend: f.querySelector('.legend').textContent };
    });
    return out;
  }
  window.addEventListener('load', function () {
    var res = { errors: errors };
    try {
      res.step = snap();
      var f = document.getElementById('chart-traj-reward');
      var area = f.querySelector('.hover-area'), box = area.getBoundingClientRect();
      area.dispatchEvent(new MouseEvent('mousemove', { clientX: box.left + 2, clientY: box.top + 10, bubbles: true }));
      var tip = f.querySelector('.tooltip');
      res.hover = tip.hidden ? '' : tip.textContent;
      var ax = document.getElementById('xaxis');
      ax.value = 'tokens';
      ax.dispatchEvent(new Event('change'));
      var sm = document.getElementById('smooth');
      sm.value = '0.6';
      sm.dispatchEvent(new Event('input'));
      res.tokens = snap();
      res.wallEnabled = !ax.querySelector('option[value="wall"]').disabled;
      ax.value = 'wall';
      ax.dispatchEvent(new Event('change'));
      res.wall = snap();
      var box2 = document.querySelector('.run-rollouts'), sel = box2.querySelector('select');
      sel.value = '0';
      sel.dispatchEvent(new Event('change'));
      res.rollouts = Array.prototype.map.call(box2.querySelectorAll('.rollout'), function (r) { return !r.hidden; });
    } catch (e) {
      errors.push('hook: ' + e);
    }
    var pre = document.createElement('pre');
    pre.id = 'hone-test';
    pre.textContent = JSON.stringify(res);
    document.body.appendChild(pre);
  });
})();
</script>`

type chartSnap struct {
	Drawn  int    `json:"drawn"`
	Lines  int    `json:"lines"`
	Points int    `json:"points"`
	Raw    int    `json:"raw"`
	XTicks string `json:"xticks"`
	Legend string `json:"legend"`
}

type browserRecord struct {
	Errors   []string             `json:"errors"`
	Step     map[string]chartSnap `json:"step"`
	Hover    string               `json:"hover"`
	Tokens   map[string]chartSnap `json:"tokens"`
	Wall     map[string]chartSnap `json:"wall"`
	WallOn   bool                 `json:"wallEnabled"`
	Rollouts []bool               `json:"rollouts"`
}

// openInChromium loads the page in headless Chromium and returns the DOM
// after its scripts ran, and what Chromium logged.
func openInChromium(t *testing.T, chromium, page string) (dom, log string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// No network, no first-run or update traffic: the page must work
	// offline, and the test must not reach out either.
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--window-size=1400,3000", "--dump-dom", "file://"+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// The report opened in a real browser: the page renders, no script error
// or console message, every chart drawn with its points, hover, smoothing,
// the token axis and the rollout picker work.
func TestReportInBrowser(t *testing.T) {
	chromium := need(t, "chromium", "chromium", "chromium-browser")
	in, _ := fixtureInput(t, t.TempDir())
	pg, err := Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pg.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(buf.String(), `<meta charset="utf-8">`, `<meta charset="utf-8">`+browserHook, 1)
	dom, log := openInChromium(t, chromium, page)
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console: %s", l)
		}
	}
	m := regexp.MustCompile(`(?s)<pre id="hone-test">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's script did not finish; DOM:\n%.2000s\nlog:\n%s", dom, log)
	}
	var rec browserRecord
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &rec); err != nil {
		t.Fatalf("record %q: %v", m[1], err)
	}
	if len(rec.Errors) > 0 {
		t.Errorf("script errors: %q", rec.Errors)
	}
	var ids []string
	for _, s := range pg.Sections {
		for _, c := range s.Charts {
			ids = append(ids, "chart-"+c.ID)
		}
	}
	if len(rec.Step) != len(ids) {
		t.Errorf("%d charts in the browser, %d on the page", len(rec.Step), len(ids))
	}
	for _, id := range ids {
		s, ok := rec.Step[id]
		if !ok || s.Drawn == 0 || s.Lines == 0 || s.XTicks == "" {
			t.Errorf("%s: %+v; want lines with points and x ticks", id, s)
		}
	}
	// Each run a line, both in the legend; exact step ticks on 16 steps.
	if s := rec.Step["chart-loss"]; s.Lines != 2 || s.Drawn != 32 || s.XTicks != "5|10|15" || s.Legend != "ab" {
		t.Errorf("loss chart %+v", s)
	}
	if s := rec.Step["chart-eval-success"]; s.Points != 3 {
		t.Errorf("eval chart %+v: want a marker per eval", s)
	}
	for _, want := range []string{"step 1", "a: ", "b: ", "sampled by warmup@300 · trained at step 1", "quartiles"} {
		if !strings.Contains(rec.Hover, want) {
			t.Errorf("hover box %q lacks %q", rec.Hover, want)
		}
	}
	// Tokens on the x axis, smoothing on: the raw line stays, faint.
	if s := rec.Tokens["chart-loss"]; s.Drawn != 32 || s.Raw != 2 || !strings.Contains(s.XTicks, "k") {
		t.Errorf("loss chart over tokens, smoothed: %+v", s)
	}
	// Wall time on the x axis: steps 10s apart, the first ending at 1.5s,
	// the last at 151.5s.
	if s := rec.Wall["chart-loss"]; !rec.WallOn || s.Drawn != 32 || !strings.Contains(s.XTicks, "100") || strings.Contains(s.XTicks, "k") {
		t.Errorf("loss chart over wall time (option enabled %v): %+v", rec.WallOn, s)
	}
	if !slices.Equal(rec.Rollouts, []bool{true, false, false, false}) {
		t.Errorf("after choosing the first step, rollouts shown %v", rec.Rollouts)
	}
	for _, frag := range []string{`<section id="hyperparameters">`, `flat series folded away`, `<section id="rollouts">`, `<div class="msg role-tool">`} {
		if !strings.Contains(dom, frag) {
			t.Errorf("rendered page lacks %q", frag)
		}
	}
}
