package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
)

// The page's script and style, inlined so the page is one file that works
// offline. report.js is ours (no library): it draws every chart as SVG
// from the data the page carries, with exact tick labels, smoothing, a
// choice of x axis and values on hover.
var (
	//go:embed assets/report.js
	script string
	//go:embed assets/report.css
	style string
)

// pageData is what the script reads from the page.
type pageData struct {
	Runs    []runAxes `json:"runs"`
	Charts  []Chart   `json:"charts"`
	Palette []string  `json:"palette"`
}

// WriteHTML writes the page: one file, the script and style inline, the
// data as JSON, nothing fetched.
func (pg *Page) WriteHTML(w io.Writer) error {
	type sec struct {
		Section
		First int // index of the section's first chart in pageData.Charts
	}
	data := struct {
		*Page
		Title  string
		Sects  []sec
		Data   pageData
		Script template.JS
		Style  template.CSS
	}{Page: pg, Data: pageData{Runs: pg.axes, Palette: palette}, Script: template.JS(script), Style: template.CSS(style)}
	var names []string
	for _, r := range pg.Runs {
		names = append(names, r.Run)
	}
	data.Title = strings.Join(names, ", ")
	for _, s := range pg.Sections {
		data.Sects = append(data.Sects, sec{Section: s, First: len(data.Data.Charts)})
		data.Data.Charts = append(data.Data.Charts, s.Charts...)
	}
	// html/template writes a value it cannot encode as a JS comment and
	// null, and goes on: the page would have no charts and no error.
	if _, err := json.Marshal(data.Data); err != nil {
		return fmt.Errorf("report: chart data: %w", err)
	}
	if err := pageTmpl.Execute(w, data); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

var funcs = template.FuncMap{
	"add": func(a, b int) int { return a + b },
	"num": num,
	"last": func(i, n int) bool {
		return i == n-1
	},
	"color": func(i int) string { return palette[i%len(palette)] },
	// A role names a CSS class: one class, so that "user omitted" does not
	// take on the page's own classes.
	"class": safeID,
	"note":  stepNote,
	"reward": func(r *float64) string {
		if r == nil {
			return "unscored"
		}
		return exact(*r)
	},
	"episode": func(kind string, e *Episode) any {
		return struct {
			Kind, What string
			E          *Episode
		}{kind, kind + " of the group", e}
	},
	"diffs": func(t *Table) string {
		var keys []string
		for i, d := range t.Diff {
			if d {
				keys = append(keys, t.Rows[i][0])
			}
		}
		if len(keys) == 0 {
			return "no parameter differs"
		}
		n := len(keys)
		if n > 8 {
			keys = append(keys[:8], "…")
		}
		return fmt.Sprintf("%d differ (marked): %s", n, strings.Join(keys, ", "))
	},
	"joinTitles": func(fs []Folded) string {
		var t []string
		for _, f := range fs {
			t = append(t, f.Title)
		}
		return strings.Join(t, ", ")
	},
}

var pageTmpl = template.Must(template.New("page").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hone run {{.Title}}</title>
<style>{{.Style}}</style>
</head>
<body>
<header class="top">
<h1>Hone run{{if gt (len .Runs) 1}}s{{end}} {{range $i, $r := .Runs}}<span class="run-chip"><i style="background: {{color $i}}"></i><code>{{$r.Run}}</code></span>{{end}}</h1>
<form class="controls" id="controls" onsubmit="return false">
<label>x axis <select id="xaxis"><option value="step">step</option><option value="time">training time (s)</option><option value="tokens">tokens</option><option value="wall">wall time (s)</option></select></label>
<label>smoothing <input id="smooth" type="range" min="0" max="0.99" step="0.01" value="0"> <output id="smooth-value">0</output></label>
</form>
<nav class="toc"><a href="#summary">summary</a>{{if .Params}} <a href="#hyperparameters">hyperparameters</a>{{end}}{{range .Sects}} <a href="#sec-{{.ID}}">{{.Title}}</a>{{end}}{{if .Rollouts}} <a href="#rollouts">rollouts</a>{{end}}</nav>
<noscript><p class="note">The charts are drawn by the page's own script: allow JavaScript to see them. The tables below read without it.</p></noscript>
</header>
<main>
<section id="summary"><h2>Summary</h2>
{{template "table" .Summary}}
</section>
{{with .Params}}<section id="hyperparameters"><h2>Hyperparameters</h2>
<details open><summary>train_config.json of {{if gt (len .Head) 2}}each run's latest step{{with diffs .}}; {{.}}{{end}}{{else}}{{index .Head 1}}{{end}}</summary>
{{if eq (len .Head) 2}}<dl class="params">{{range .Rows}}<div><dt>{{index . 0}}</dt><dd>{{index . 1}}</dd></div>{{end}}</dl>
{{else}}{{template "table" .}}{{end}}
</details></section>
{{end}}{{range .Sects}}{{$first := .First}}<section id="sec-{{.ID}}"><h2>{{.Title}}</h2>
{{if .Caption}}<p class="caption">{{.Caption}}</p>
{{end}}{{with .Charts}}<div class="grid">
{{range $i, $c := .}}<figure class="chart" id="chart-{{$c.ID}}" data-i="{{add $first $i}}"><figcaption>{{$c.Title}}</figcaption><div class="plot"></div><div class="legend"></div></figure>
{{end}}</div>
{{end}}{{with .Folded}}<details class="folded"><summary>{{len .}} flat series folded away: {{joinTitles .}}</summary>
<table class="data">{{range .}}<tr id="folded-{{.ID}}"><th>{{.Title}}</th><td>{{range $j, $v := .Values}}{{if $j}}; {{end}}{{$v}}{{end}}</td></tr>
{{end}}</table></details>
{{end}}{{with .Table}}{{template "table" .}}{{end}}
</section>
{{end}}{{with .Rollouts}}<section id="rollouts"><h2>Sample rollouts</h2>
<p class="caption">For each step, the group whose rewards spread widest, and in it the best and the worst episode: the pair GRPO learns most from.</p>
{{range .}}{{$n := len .Steps}}<div class="run-rollouts" data-run="{{.Run}}">
<label>run <code>{{.Run}}</code>, step <select class="rollout-step">{{range $i, $s := .Steps}}<option value="{{$i}}"{{if last $i $n}} selected{{end}}>{{num $s.X}}</option>{{end}}</select></label>{{if gt .Of $n}} <span class="caption">showing {{$n}} of its {{.Of}} steps, evenly spaced, the first and the last among them</span>{{end}}
{{range $i, $s := .Steps}}<div class="rollout" data-i="{{$i}}"{{if not (last $i $n)}} hidden{{end}}>
<p class="meta">Step {{num $s.X}}: group <code>{{$s.Rollout.GroupID}}</code>{{with $s.Rollout.ScenarioID}}, scenario <code>{{.}}</code>{{end}}{{with $s.Rollout.Env}}, environment <code>{{.}}</code>{{end}}, {{$s.Rollout.Episodes}} episodes. {{note $s}}</p>
<div class="pair">{{with $s.Rollout.Best}}{{template "episode" (episode "best" .)}}{{end}}{{with $s.Rollout.Worst}}{{template "episode" (episode "worst" .)}}{{end}}</div>
</div>
{{end}}</div>
{{end}}</section>
{{end}}{{range .Notes}}<p class="note">{{.}}</p>
{{end}}</main>
{{if .Sources}}<footer><details><summary>Read from {{len .Sources}} file{{if gt (len .Sources) 1}}s{{end}}</summary>{{range .Sources}} <code>{{.}}</code>{{end}}</details></footer>
{{end}}<script type="application/json" id="hone-data">{{.Data}}</script>
<script>{{.Script}}</script>
</body>
</html>
{{define "table"}}<table class="data">{{if .Head}}<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>{{end}}
<tbody>{{range $i, $r := .Rows}}<tr{{if index $.Diff $i}} class="diff"{{end}}>{{range $j, $c := $r}}{{if $j}}<td>{{$c}}</td>{{else}}<th>{{$c}}</th>{{end}}{{end}}</tr>
{{end}}</tbody></table>{{end}}
{{define "episode"}}<article class="episode {{.Kind}}">
<header><b>{{.What}}</b>: reward {{reward .E.Reward}} · <code>{{.E.ID}}</code> · sampled by <code>{{.E.Sampler}}</code> (step {{.E.SampledStep}}) · {{.E.File}}</header>
{{with .E.Components}}<ul class="components">{{range .}}<li title="{{.Explanation}}">{{.Name}} = {{num .Value}}</li>{{end}}</ul>
{{end}}{{with .E.Metrics}}<p class="metrics">{{range .}}<span>{{.Key}} = {{.Value}}</span> {{end}}</p>
{{end}}{{with .E.Error}}<p class="error">error: {{.}}</p>
{{end}}<div class="conv">
{{range $i, $m := .E.Messages}}{{if and $.E.Omitted (eq $i $.E.OmittedAt)}}<div class="omitted">… {{$.E.Omitted}} messages left out …</div>
{{end}}<div class="msg role-{{class $m.Role}}"><div class="role">{{$m.Role}}{{with $m.Name}} <code>{{.}}</code>{{end}}{{with $m.ToolCallID}} ← <code>{{.}}</code>{{end}}{{with $m.FinishReason}} <span class="finish">{{.}}</span>{{end}}</div>
{{with $m.ReasoningContent}}<details class="reasoning"><summary>reasoning</summary><pre>{{.}}</pre></details>{{end}}{{with $m.Content}}<pre class="content">{{.}}</pre>{{end}}{{with $m.Parts}}<p class="parts">{{.}}</p>{{end}}{{range $m.ToolCalls}}<div class="toolcall">calls <code>{{.Name}}</code><pre>{{.Arguments}}</pre>{{with .ID}}<span class="id">{{.}}</span>{{end}}</div>{{end}}{{with $m.MoreToolCalls}}<div class="omitted">… {{.}} more tool calls left out …</div>{{end}}</div>
{{end}}</div>
</article>
{{end}}`))
