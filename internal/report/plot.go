package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot size on paper and the resolution it is rasterized at: 5.6x3.3 in at
// 144 dpi is 806x475 pixels. The page shows two plots a row, each about
// 600 CSS pixels wide, so a 10 pt tick label reads at about 14 px and the
// image stays sharp when the page is zoomed.
const (
	plotW   = 5.6 * vg.Inch
	plotH   = 3.3 * vg.Inch
	plotDPI = 144
)

// sans is the typeface of every text; gonum/plot's default is a serif.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// line is one drawn series; Lo/Hi, when set, shade a band around it
// (mean ± std).
type line struct {
	Name   string
	X, Y   []float64
	Lo, Hi []float64
	Points bool // draw a marker on every point (sparse data such as evals)
	Dashed bool
}

// chart is one figure: a title, axis labels and its lines.
type chart struct {
	ID     string // anchor and alt text
	Title  string
	XLabel string
	YLabel string
	Lines  []line
}

// palette is the Tableau 10 order: distinct, colour-blind tolerable and
// readable on white.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x17, 0xbe, 0xcf, 0xff},
}

// renderPNG draws c and returns the PNG bytes.
func renderPNG(c chart) ([]byte, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.Title.TextStyle.Font = sans
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font = sans
		a.Tick.Label.Font.Size = vg.Points(10)
		a.Padding = vg.Points(2)
	}
	p.X.Tick.Marker = integerTicks{}
	p.Y.Tick.Marker = compactTicks{}
	grid := plotter.NewGrid()
	grid.Horizontal.Color = color.Gray{0xdd}
	grid.Vertical.Color = color.Gray{0xdd}
	p.Add(grid)

	ymin, ymax := math.Inf(1), math.Inf(-1)
	for i, l := range c.Lines {
		col := palette[i%len(palette)]
		if len(l.Lo) == len(l.X) && len(l.Hi) == len(l.X) && len(l.X) > 1 {
			band := make(plotter.XYs, 0, 2*len(l.X))
			for j := range l.X {
				band = append(band, plotter.XY{X: l.X[j], Y: l.Hi[j]})
			}
			for j := len(l.X) - 1; j >= 0; j-- {
				band = append(band, plotter.XY{X: l.X[j], Y: l.Lo[j]})
			}
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return nil, fmt.Errorf("report: %s: band: %w", c.ID, err)
			}
			fill := col
			fill.A = 0x38
			poly.Color = fill
			poly.LineStyle.Width = 0
			p.Add(poly)
			for j := range l.X {
				ymin, ymax = math.Min(ymin, l.Lo[j]), math.Max(ymax, l.Hi[j])
			}
		}
		xys := make(plotter.XYs, len(l.X))
		for j := range l.X {
			xys[j] = plotter.XY{X: l.X[j], Y: l.Y[j]}
			ymin, ymax = math.Min(ymin, l.Y[j]), math.Max(ymax, l.Y[j])
		}
		var thumbs []plot.Thumbnailer
		if len(xys) > 1 {
			ln, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("report: %s: %s: %w", c.ID, l.Name, err)
			}
			ln.LineStyle.Color = col
			ln.LineStyle.Width = vg.Points(1.6)
			if l.Dashed {
				ln.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(ln)
			thumbs = append(thumbs, ln)
		}
		if l.Points || len(xys) == 1 {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("report: %s: %s: %w", c.ID, l.Name, err)
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			sc.GlyphStyle.Radius = vg.Points(3)
			p.Add(sc)
			thumbs = append(thumbs, sc)
		}
		if len(c.Lines) > 1 {
			p.Legend.Add(l.Name, thumbs...)
		}
	}
	// Leave a margin above and below the data so a curve does not run along
	// the frame; a constant series gets a visible range around its value.
	if !math.IsInf(ymin, 0) {
		d := (ymax - ymin) * 0.05
		if d == 0 {
			d = math.Max(math.Abs(ymin)*0.1, 1e-3)
		}
		p.Y.Min, p.Y.Max = ymin-d, ymax+d
	}
	// One-step runs: widen the x range the same way so the point is centred.
	if p.X.Min == p.X.Max {
		p.X.Min, p.X.Max = p.X.Min-1, p.X.Max+1
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font = sans
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = vg.Points(2)
	p.Legend.YOffs = -vg.Points(4)

	img := vgimg.NewWith(vgimg.UseWH(plotW, plotH), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(img))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: %s: png: %w", c.ID, err)
	}
	return buf.Bytes(), nil
}

// integerTicks labels only whole steps: a step axis from 1 to 3 should not
// read 1.5.
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		out = append(out, t)
	}
	if countLabels(out) >= 2 || max-min > 20 {
		return out
	}
	out = out[:0]
	for v := math.Ceil(min); v <= max; v++ {
		out = append(out, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
	}
	return out
}

// compactTicks keeps the default tick positions but labels them with the
// fewest significant digits that tell every label apart (5.5416, 5.5420
// rather than 5.54, 5.54), with no padding zeros (5750, not 5750.00), and
// in exponent form for very small or large values (2e-5).
type compactTicks struct{}

func (compactTicks) Ticks(min, max float64) []plot.Tick {
	ts := (plot.DefaultTicks{}).Ticks(min, max)
	var idx []int
	for i := range ts {
		if ts[i].Label != "" {
			idx = append(idx, i)
		}
	}
	for prec := 2; prec <= 10; prec++ {
		seen := map[string]bool{}
		distinct := true
		for _, i := range idx {
			l := tickLabel(ts[i].Value, prec)
			if seen[l] {
				distinct = false
			}
			seen[l] = true
			ts[i].Label = l
		}
		if distinct {
			break
		}
	}
	return ts
}

// tickLabel formats v with prec significant digits, plainly when that is
// short and with an exponent otherwise.
func tickLabel(v float64, prec int) string {
	if v == 0 {
		return "0"
	}
	if a := math.Abs(v); a < 1e-3 || a >= 1e6 {
		return trimExp(strconv.FormatFloat(v, 'e', prec-1, 64))
	}
	return strconv.FormatFloat(strconvRound(v, prec), 'f', -1, 64)
}

// strconvRound rounds v to prec significant digits.
func strconvRound(v float64, prec int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', prec, 64), 64)
	return r
}

func countLabels(ts []plot.Tick) int {
	n := 0
	for _, t := range ts {
		if t.Label != "" {
			n++
		}
	}
	return n
}

// trimExp turns "2.50e-05" into "2.5e-5".
func trimExp(s string) string {
	mant, exp, ok := strings.Cut(s, "e")
	if !ok {
		return s
	}
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	sign := ""
	if strings.HasPrefix(exp, "-") {
		sign = "-"
	}
	exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if exp == "" {
		return mant
	}
	return mant + "e" + sign + exp
}
