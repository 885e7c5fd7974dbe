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
			// color.RGBA is premultiplied; a translucent fill needs NRGBA.
			poly.Color = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0x40}
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
		// The legend sits in the top right corner; raise the top so it
		// covers no data (about 7% of the height per entry).
		if n := len(c.Lines); n > 1 {
			p.Y.Max += (p.Y.Max - p.Y.Min) * (0.03 + 0.08*float64(n))
		}
	}
	// Markers on the first and last step would be cut in half by the frame.
	for _, l := range c.Lines {
		if (l.Points || len(l.X) == 1) && p.X.Max > p.X.Min {
			d := (p.X.Max - p.X.Min) * 0.03
			p.X.Min, p.X.Max = p.X.Min-d, p.X.Max+d
			break
		}
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
	return niceTicks(min, max, true)
}

// compactTicks labels the y axis at round values (1, 2 or 5 times a power
// of ten) with the fewest significant digits that tell every label apart
// (5.5416, 5.5420 rather than 5.54, 5.54), no padding zeros (5750, not
// 5750.00), and an exponent for very small or large values (2e-5).
type compactTicks struct{}

func (compactTicks) Ticks(min, max float64) []plot.Tick {
	return niceTicks(min, max, false)
}

// niceTicks puts 3 to 6 labelled ticks at multiples of 1, 2 or 5 times a
// power of ten (at least 1 when integer is set), with unlabelled minor
// ticks between them. gonum's DefaultTicks can choose 2.5, 12.5, 22.5 for
// a 1..24 range, which reads badly on a step axis.
func niceTicks(min, max float64, integer bool) []plot.Tick {
	if !(max > min) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return []plot.Tick{{Value: min, Label: tickLabel(min, 6)}}
	}
	span := max - min
	mag := math.Pow(10, math.Floor(math.Log10(span/5)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(m*mag) <= 6 {
			step = m * mag
			break
		}
	}
	if integer && step < 1 {
		step = 1
	}
	minor := step / 5
	if lead := step / mag; lead == 2 || lead == 20 {
		minor = step / 4
	}
	if integer && minor < 1 {
		minor = 0
	}
	var ts []plot.Tick
	first := math.Ceil(min/step - 1e-9)
	for k := first; k*step <= max+step*1e-9; k++ {
		ts = append(ts, plot.Tick{Value: k * step})
	}
	// Label with as few digits as keep the labels distinct.
	for prec := 1; prec <= 12; prec++ {
		seen := map[string]bool{}
		distinct := true
		for i := range ts {
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
	if minor > 0 {
		for k := math.Ceil(min/minor - 1e-9); k*minor <= max+minor*1e-9; k++ {
			v := k * minor
			if r := math.Abs(v/step - math.Round(v/step)); r > 1e-6 {
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	return ts
}

// tickLabel formats v with prec significant digits, plainly when that is
// short and with an exponent otherwise.
func tickLabel(v float64, prec int) string {
	if math.Abs(v) < 1e-300 {
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
