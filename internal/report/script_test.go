package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// need returns the path of a tool the test runs; without it the test
// fails under CI (which installs it) and is skipped elsewhere, saying how
// to install it.
func need(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := names[0] + " not found; apt-get install " + pkg
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// runScript runs the page's script under Node with a test program that
// receives the script's exports as r and prints JSON.
func runScript(t *testing.T, program string, out any) {
	t.Helper()
	node := need(t, "nodejs", "node", "nodejs")
	js, err := filepath.Abs(filepath.Join("assets", "report.js"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "-e", "const r = require(process.argv[1]);\n"+program, js)
	b, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node printed %q: %v", b, err)
	}
}

type tick struct {
	V     float64 `json:"v"`
	Label string  `json:"label"`
}

// labelValue reads a tick label as an exact decimal ("15k", "1.5e-7").
func labelValue(t *testing.T, label string) *big.Rat {
	t.Helper()
	scale := map[byte]string{'k': "1e3", 'M': "1e6", 'G': "1e9", 'T': "1e12"}
	r := new(big.Rat)
	mult := big.NewRat(1, 1)
	if s, ok := scale[label[len(label)-1]]; ok {
		mult.SetString(s)
		label = label[:len(label)-1]
	}
	if _, ok := r.SetString(label); !ok {
		t.Fatalf("tick label %q is not a number", label)
	}
	return r.Mul(r, mult)
}

// Tick labels are exact: each names its tick's own value, ticks are evenly
// spaced at 1, 2 or 5 times a power of ten, and labels are never rounded
// to one digit (the old axis wrote "20" under the tick at 15 and "2"
// under 1.5).
func TestTickLabelsExact(t *testing.T) {
	type tc struct {
		Min, Max float64
		Integer  bool
		Target   int
	}
	cases := []tc{
		{1, 16, true, 6}, {0.1, 1.7, false, 5}, {0.12, 2.3, false, 5}, {0.99999995, 1.0000001, false, 5},
		{6258, 239159, true, 6}, {1e-7, 3e-7, false, 5}, {-2.5, 1.2, false, 5}, {0, 1.5e6, true, 6},
		{1e12, 3e15, true, 6}, {-2e-4, 2e-4, false, 5}, {0.0004, 0.0016, false, 5}, {5.5397, 5.5445, false, 5},
		{-0.89, 0.74, false, 5}, {0, 116, true, 8}, {1, 3, true, 6}, {0.3, 0.7, false, 2}, {4750, 5900, false, 5},
		{1e9, 3e12, false, 5}, {-1e-9, 1e-9, false, 5}, {12345.1, 12345.9, false, 5}, {0, 0.002, false, 5},
	}
	arg, _ := json.Marshal(cases)
	var got [][]tick
	runScript(t, "const cases = "+string(arg)+";\nconsole.log(JSON.stringify(cases.map(c => r.niceTicks(c.Min, c.Max, c.Integer, c.Target))));", &got)
	if len(got) != len(cases) {
		t.Fatalf("%d answers for %d cases", len(got), len(cases))
	}
	for i, ticks := range got {
		c := cases[i]
		if len(ticks) < 2 || len(ticks) > c.Target+1 {
			t.Errorf("%+v: %d ticks %v", c, len(ticks), ticks)
			continue
		}
		var step *big.Rat
		for j, tk := range ticks {
			exact := labelValue(t, tk.Label)
			if f, _ := exact.Float64(); f != tk.V {
				t.Errorf("%+v: label %q reads %s, but the tick is drawn at %v", c, tk.Label, exact.FloatString(20), tk.V)
			}
			if tk.V < c.Min-1e-9*math.Abs(c.Max-c.Min) || tk.V > c.Max+1e-9*math.Abs(c.Max-c.Min) {
				t.Errorf("%+v: tick %v outside the range", c, tk.V)
			}
			if c.Integer && !exact.IsInt() {
				t.Errorf("%+v: tick %q on an integer axis", c, tk.Label)
			}
			if j == 0 {
				continue
			}
			d := new(big.Rat).Sub(exact, labelValue(t, ticks[j-1].Label))
			if step == nil {
				step = d
				if !niceStep(d) {
					t.Errorf("%+v: step %s is not 1, 2 or 5 times a power of ten", c, d.FloatString(20))
				}
			} else if d.Cmp(step) != 0 {
				t.Errorf("%+v: ticks %v are not evenly spaced", c, ticks)
			}
		}
	}
	labels := func(i int) []string {
		var out []string
		for _, tk := range got[i] {
			out = append(out, tk.Label)
		}
		return out
	}
	for i, want := range map[int][]string{
		0:  {"5", "10", "15"},
		1:  {"0.5", "1", "1.5"},
		4:  {"50k", "100k", "150k", "200k"},
		5:  {"1e-7", "1.5e-7", "2e-7", "2.5e-7", "3e-7"},
		8:  {"5e14", "1e15", "1.5e15", "2e15", "2.5e15", "3e15"},
		9:  {"-2e-4", "-1e-4", "0", "1e-4", "2e-4"},
		10: {"0.0005", "0.001", "0.0015"},
	} {
		if !slices.Equal(labels(i), want) {
			t.Errorf("%+v: labels %q, want %q", cases[i], labels(i), want)
		}
	}
}

// niceStep reports whether d is 1, 2 or 5 times a power of ten.
func niceStep(d *big.Rat) bool {
	f, _ := d.Float64()
	e := math.Floor(math.Log10(f))
	for _, m := range []float64{1, 2, 5, 10} {
		want, _ := new(big.Rat).SetString(fmt.Sprintf("%ge%d", m, int(e)))
		if want.Cmp(d) == 0 {
			return true
		}
	}
	return false
}

// Smoothing is TensorBoard's debiased EMA; values read on hover keep six
// significant digits and whole numbers whole.
func TestScriptSmoothingAndValues(t *testing.T) {
	var got struct {
		EMA  []float64 `json:"ema"`
		Raw  []float64 `json:"raw"`
		Fmt  []string  `json:"fmt"`
		MapX []float64 `json:"mapx"`
		NaN  bool      `json:"nan"`
	}
	runScript(t, `const run = {steps: [1, 2, 4], time: [1.5, 3, 6]};
console.log(JSON.stringify({ema: r.ema([1, 2, 3, 10], 0.5), raw: r.ema([1, 2], 0),
  fmt: [0, 1234567, 0.123456789, -2.5e-7, 1e21, 42.000001].map(r.fmtValue),
  mapx: [0, 1, 3, 4, 9].map(x => r.mapX(run, "time", x)).concat([r.mapX(run, "step", 7)]),
  nan: Number.isNaN(r.mapX(run, "tokens", 1))}));`, &got)
	// Debiased: last_i = a*last + (1-a)*y_i over weights 1 - a^i.
	want := []float64{1, (0.25 + 1) / 0.75, (0.125 + 0.5 + 1.5) / 0.875, (0.0625 + 0.25 + 0.75 + 5) / 0.9375}
	for i := range want {
		if math.Abs(got.EMA[i]-want[i]) > 1e-12 {
			t.Errorf("ema[%d] = %v, want %v", i, got.EMA[i], want[i])
		}
	}
	if !slices.Equal(got.Raw, []float64{1, 2}) {
		t.Errorf("no smoothing changed the values: %v", got.Raw)
	}
	if w := []string{"0", "1234567", "0.123457", "-2.5e-7", "1e21", "42"}; !slices.Equal(got.Fmt, w) {
		t.Errorf("fmtValue %q, want %q", got.Fmt, w)
	}
	// Training time: linear between logged steps, 0 at step 0, flat after
	// the last; NaN for an axis the run did not log.
	if !slices.Equal(got.MapX, []float64{0, 1.5, 4.5, 6, 6, 7}) || !got.NaN {
		t.Errorf("mapX %v, NaN for a missing axis: %v", got.MapX, got.NaN)
	}
}

// A series that changes only in its last bit (reward_group_std of a run
// whose groups never change, summed in another order) spans one ulp: the
// axis must still get a few ticks. niceTicks counted ticks by dividing
// values near 0.2 by a step of 1e-18, beyond float64's precision, and
// grew an array until the page's script died ("Invalid array length"),
// leaving the chart undrawn; the padded domain was one ulp wide too.
func TestTicksOnNearlyFlatSeries(t *testing.T) {
	var got struct {
		Ticks  []tick    `json:"ticks"`
		Domain []float64 `json:"domain"`
	}
	runScript(t, `const a = 0.2163412372696415, b = 0.21634123726964152;
const d = r.domain([{xs: [1, 2], src: {y: [a, b]}}], false);
console.log(JSON.stringify({ticks: r.niceTicks(d.y0, d.y1, false, 5), domain: [d.y0, d.y1]}));`, &got)
	if n := len(got.Ticks); n == 0 || n > 6 {
		t.Errorf("%d ticks on a one-ulp range: %v", n, got.Ticks)
	}
	const y = 0.2163412372696415
	if lo, hi := got.Domain[0], got.Domain[1]; !(lo < y && hi > y && hi-lo > 1e-9*y) {
		t.Errorf("domain [%v, %v] of a nearly flat series at %v: want it padded to a visible span", lo, hi, y)
	}
}

// Values near the float64 limit (a metric at 1.7e308 beside one at
// -1.7e308) get a finite padded domain and ticks inside it: the span
// y1 - y0 overflowed to Inf, the padding with it, and the axis ran from
// -Inf to +Inf with no ticks and every point drawn at NaN (JSON writes
// Infinity as null, read here as 0).
func TestDomainAndTicksNearFloatLimit(t *testing.T) {
	var got struct {
		Domain []float64 `json:"domain"`
		Ticks  []tick    `json:"ticks"`
		Points []float64 `json:"points"`
		Frac   []float64 `json:"frac"`
	}
	runScript(t, `const d = r.domain([{xs: [1, 2, 3], src: {y: [-1.7e308, 0, 1.7e308]}}], true);
const flat = r.domain([{xs: [1, 2], src: {y: [1.79e308, 1.79e308]}}], false);
console.log(JSON.stringify({domain: [d.y0, d.y1, d.x0, d.x1], ticks: r.niceTicks(d.y0, d.y1, false, 5),
  points: [flat.y0, flat.y1], frac: [-1.7e308, 0, 1.7e308].map(v => r.frac(v, d.y0, d.y1))}));`, &got)
	lo, hi := got.Domain[0], got.Domain[1]
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < -1.7e308 && hi > 1.7e308) {
		t.Errorf("domain [%v, %v] of values ±1.7e308: want finite and padded", lo, hi)
	}
	if n := len(got.Ticks); n < 2 || n > 6 {
		t.Errorf("%d ticks on [%v, %v]: %v", n, lo, hi, got.Ticks)
	}
	for _, tk := range got.Ticks {
		if math.IsInf(tk.V, 0) || tk.V < lo || tk.V > hi {
			t.Errorf("tick %+v outside [%v, %v]", tk, lo, hi)
		}
	}
	if p := got.Points; len(p) != 2 || math.IsInf(p[0], 0) || math.IsInf(p[1], 0) || !(p[0] < 1.79e308 && p[1] >= 1.79e308) {
		t.Errorf("domain of a flat series at 1.79e308: %v, want finite around it", p)
	}
	if f := got.Frac; len(f) != 3 || !(f[0] > 0 && f[0] < 0.5 && math.Abs(f[1]-0.5) < 1e-9 && f[2] > 0.5 && f[2] < 1) {
		t.Errorf("where -1.7e308, 0, 1.7e308 are drawn on the axis: %v, want inside (0, 1)", f)
	}
}
