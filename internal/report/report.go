package report

import (
	"context"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/trajectory"
)

// Input is everything one page shows. Metrics is required.
type Input struct {
	Run          string
	Metrics      *Metrics
	Evals        []EvalRow
	Trajectories []trajectory.StepSummary // from TrajectoryRewards
	// Sources lists the files read, shown at the foot of the page.
	Sources []string
}

// Figure is one rendered plot.
type Figure struct {
	ID    string
	Title string
	PNG   []byte
}

// Section is a titled group of figures.
type Section struct {
	Title   string
	Figures []Figure
}

// Page is what Render writes, exposed so that callers and tests can look at
// the figures without parsing HTML.
type Page struct {
	Summary  Summary
	Sections []Section
	Sources  []string
}

// known are the trainer's metrics in the order a reader looks for them,
// with a title and a y label. reward_std is drawn as the band of
// reward_mean and gets no plot of its own.
var known = []struct{ key, title, ylabel string }{
	{"reward_mean", "Reward (trainer, mean ± std)", "reward"},
	{"loss", "Loss", "loss"},
	{"policy_loss", "Policy loss", "policy loss"},
	{"kl", "KL to reference", "KL"},
	{"entropy", "Entropy", "nats / token"},
	{"grad_norm", "Gradient norm", "L2 norm"},
	{"clip_frac", "Clip fraction", "fraction of tokens"},
	{"lr", "Learning rate", "lr"},
	{"ratio_mean", "Importance ratio mean", "π/π_old"},
	{"sampler_logp_diff_mean", "Trainer − sampler logprob gap (mean |Δ|)", "nats / token"},
}

// otherTitles names the trainer's bookkeeping series; anything else is
// titled after its key.
var otherTitles = map[string]string{
	"tokens":           "Tokens per step",
	"trainable_tokens": "Trainable tokens per step",
	"tokens_per_s":     "Throughput (tokens/s)",
	"seconds":          "Step time (s)",
	"groups":           "Groups per step",
	"groups_trainable": "Trainable groups per step",
	"reward_std":       "Reward std",
}

// Build renders every figure of in.
func Build(ctx context.Context, in Input) (*Page, error) {
	if in.Metrics == nil {
		return nil, fmt.Errorf("report: no metrics")
	}
	m := in.Metrics
	pg := &Page{Summary: Summarize(in.Run, m), Sources: in.Sources}
	var train, other []chart
	used := map[string]bool{"reward_std": true}
	for _, k := range known {
		s := m.Get(k.key)
		if s == nil {
			continue
		}
		used[k.key] = true
		l := line{Name: k.key, X: s.X, Y: s.Y}
		if k.key == "reward_mean" {
			if sd := m.Get("reward_std"); sd != nil {
				l.Lo, l.Hi = bandAt(s, sd)
			}
		}
		train = append(train, chart{ID: k.key, Title: k.title, XLabel: "step", YLabel: k.ylabel, Lines: []line{l}})
	}
	if sd := m.Get("reward_std"); sd != nil && m.Get("reward_mean") == nil {
		used["reward_std"] = false
	}
	for _, s := range m.Series {
		if used[s.Name] {
			continue
		}
		title := otherTitles[s.Name]
		if title == "" {
			title = humanize(s.Name)
		}
		other = append(other, chart{ID: s.Name, Title: title, XLabel: "step", YLabel: s.Name,
			Lines: []line{{Name: s.Name, X: s.X, Y: s.Y}}})
	}
	var sections []struct {
		title  string
		charts []chart
	}
	add := func(title string, cs []chart) {
		if len(cs) > 0 {
			sections = append(sections, struct {
				title  string
				charts []chart
			}{title, cs})
		}
	}
	add("Training", train)
	add("Evaluation", evalCharts(in.Evals))
	add("Trajectories", trajCharts(in.Trajectories, m.Get("reward_mean")))
	add("Other metrics", other)
	for _, sec := range sections {
		out := Section{Title: sec.title}
		for _, c := range sec.charts {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			png, err := renderPNG(c)
			if err != nil {
				return nil, err
			}
			out.Figures = append(out.Figures, Figure{ID: c.ID, Title: c.Title, PNG: png})
		}
		pg.Sections = append(pg.Sections, out)
	}
	return pg, nil
}

// bandAt returns mean-std and mean+std at the steps of mean; steps without
// a std get a zero-width band.
func bandAt(mean, sd *Series) (lo, hi []float64) {
	at := make(map[float64]float64, len(sd.X))
	for i, x := range sd.X {
		at[x] = sd.Y[i]
	}
	lo, hi = make([]float64, len(mean.X)), make([]float64, len(mean.X))
	for i, x := range mean.X {
		lo[i], hi[i] = mean.Y[i]-at[x], mean.Y[i]+at[x]
	}
	return lo, hi
}

// evalCharts draws one chart per eval metric with one line per label, in
// the order labels first appear.
func evalCharts(rows []EvalRow) []chart {
	var metrics, labels []string
	seenM, seenL := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		if !seenL[r.Label] {
			seenL[r.Label] = true
			labels = append(labels, r.Label)
		}
		keys := make([]string, 0, len(r.Metrics))
		for k := range r.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !seenM[k] {
				seenM[k] = true
				metrics = append(metrics, k)
			}
		}
	}
	var out []chart
	for _, k := range metrics {
		c := chart{ID: "eval-" + k, Title: "Eval: " + humanize(k), XLabel: "step", YLabel: k}
		for _, lab := range labels {
			type pt struct{ x, y float64 }
			var pts []pt
			for _, r := range rows {
				if v, ok := r.Metrics[k]; ok && r.Label == lab {
					pts = append(pts, pt{r.Step, v})
				}
			}
			if len(pts) == 0 {
				continue
			}
			sort.SliceStable(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
			l := line{Name: lab, Points: true}
			for _, p := range pts {
				l.X, l.Y = append(l.X, p.x), append(l.Y, p.y)
			}
			c.Lines = append(c.Lines, l)
		}
		out = append(out, c)
	}
	return out
}

// trajCharts draws the reward per step computed from the trajectories, with
// the trainer's own reward_mean dashed beside it when there is one.
func trajCharts(steps []trajectory.StepSummary, trainer *Series) []chart {
	var l line
	var scored line
	l.Name, scored.Name = "trajectories", "scored"
	for _, s := range steps {
		scored.X, scored.Y = append(scored.X, float64(s.Step)), append(scored.Y, float64(s.Reward.Scored))
		if s.Reward.Scored == 0 {
			continue
		}
		x := float64(s.Step)
		l.X, l.Y = append(l.X, x), append(l.Y, s.Reward.Mean)
		l.Lo, l.Hi = append(l.Lo, s.Reward.Mean-s.Reward.Std), append(l.Hi, s.Reward.Mean+s.Reward.Std)
	}
	if len(scored.X) == 0 {
		return nil
	}
	var out []chart
	if len(l.X) > 0 {
		c := chart{ID: "traj-reward", Title: "Reward (trajectories, mean ± std)", XLabel: "step", YLabel: "reward", Lines: []line{l}}
		if trainer != nil {
			c.Lines = append(c.Lines, line{Name: "trainer reward_mean", X: trainer.X, Y: trainer.Y, Dashed: true})
		}
		out = append(out, c)
	}
	out = append(out, chart{ID: "traj-scored", Title: "Scored trajectories per step", XLabel: "step", YLabel: "trajectories", Lines: []line{scored}})
	return out
}

// humanize turns "tokens_per_s" into "Tokens per s".
func humanize(k string) string {
	s := strings.ReplaceAll(k, "_", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Render builds the page for in and writes it as HTML to w.
func Render(ctx context.Context, w io.Writer, in Input) error {
	pg, err := Build(ctx, in)
	if err != nil {
		return err
	}
	return pg.WriteHTML(w)
}

// WriteHTML writes the page: inline CSS, no scripts, every image a data URI.
func (pg *Page) WriteHTML(w io.Writer) error {
	type fig struct {
		ID, Title string
		Src       template.HTMLAttr
	}
	type sec struct {
		Title   string
		Figures []fig
	}
	data := struct {
		Run     string
		Rows    [][2]string
		Sects   []sec
		Sources []string
	}{Run: pg.Summary.Run, Rows: pg.Summary.rows(), Sources: pg.Sources}
	for _, s := range pg.Sections {
		out := sec{Title: s.Title}
		for _, f := range s.Figures {
			// The whole attribute is trusted markup: base64 holds no quote
			// or ampersand, and as a plain URL html/template would write
			// every "+" as "&#43;", a tenth more bytes for nothing.
			out.Figures = append(out.Figures, fig{ID: f.ID, Title: f.Title,
				Src: template.HTMLAttr(`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(f.PNG) + `"`)})
		}
		data.Sects = append(data.Sects, out)
	}
	if err := pageTmpl.Execute(w, data); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

// rows formats the summary table.
func (s Summary) rows() [][2]string {
	r := [][2]string{{"run", s.Run}}
	steps := strconv.Itoa(s.Rows)
	if s.Rows > 0 {
		steps += fmt.Sprintf(" (step %s to %s)", num(s.FirstStep), num(s.LastStep))
	}
	r = append(r, [2]string{"steps", steps})
	if s.HasReward {
		r = append(r,
			[2]string{"reward mean, first → last", fmt.Sprintf("%s → %s (%+.4g)", num(s.FirstReward), num(s.LastReward), s.LastReward-s.FirstReward)},
			[2]string{"best step", fmt.Sprintf("%s (reward mean %s)", num(s.BestStep), num(s.BestReward))})
	}
	if s.HasTokens {
		r = append(r, [2]string{"total tokens", groupDigits(s.TotalTokens)})
	}
	if s.HasSeconds {
		wall := strconv.FormatFloat(s.WallSeconds, 'g', 3, 64) + "s"
		if s.WallSeconds >= 10 {
			wall = time.Duration(s.WallSeconds * float64(time.Second)).Round(time.Second).String()
		}
		r = append(r, [2]string{"wall time", wall})
	}
	return r
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 5, 64) }

// groupDigits writes 1234567 as "1 234 567" (thin spaces read in any locale).
func groupDigits(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u2009")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hone run {{.Run}}</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #222; margin: 24px auto; max-width: 1400px; padding: 0 16px; background: #fafafa; }
h1 { font-size: 24px; margin: 0 0 12px; }
h2 { font-size: 19px; margin: 28px 0 10px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
table.summary { border-collapse: collapse; background: #fff; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
table.summary th, table.summary td { padding: 6px 14px; border-bottom: 1px solid #eee; text-align: left; }
table.summary th { font-weight: 600; color: #555; white-space: nowrap; }
table.summary td { font-variant-numeric: tabular-nums; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr)); gap: 14px; }
figure { margin: 0; background: #fff; padding: 6px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
figure img { width: 100%; height: auto; display: block; }
footer { margin-top: 28px; color: #777; font-size: 13px; }
footer code { word-break: break-all; }
</style>
</head>
<body>
<h1>Hone run <code>{{.Run}}</code></h1>
<table class="summary">
{{range .Rows}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>
{{range .Sects}}<h2>{{.Title}}</h2>
<div class="grid">
{{range .Figures}}<figure id="{{.ID}}"><img {{.Src}} alt="{{.Title}}" width="800" height="450"></figure>
{{end}}</div>
{{end}}{{if .Sources}}<footer>Read from:{{range .Sources}} <code>{{.}}</code>{{end}}</footer>
{{end}}</body>
</html>
`))
