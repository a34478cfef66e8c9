package echo

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/cornflakes-go/cornflakes/internal/report"
)

// WriteFiles writes results to dir (created if missing) so that a run
// leaves its data and a picture of it behind: echo.json (the same JSON as
// `cornflakes echo --json` prints), echo.csv (one row per result, the JSON
// field names as header, a field JSON omits as an empty cell) and, when
// there are results, the PNG plots echo.png (throughput per shape, one bar
// per approach) and, when any p99 was measured, echo-latency.png (p99
// latency per shape and approach). It returns the paths written.
func WriteFiles(dir string, results []Result) ([]string, error) {
	d, err := report.Create(dir, "echo")
	if err != nil {
		return nil, err
	}
	rs := results
	if rs == nil {
		rs = []Result{} // as --json prints an empty run: [] rather than null
	}
	if err := d.JSON("echo.json", rs); err != nil {
		return d.Paths(), err
	}
	if err := d.CSV("echo.csv", csvHeader, csvRows(results)); err != nil {
		return d.Paths(), err
	}
	if len(results) == 0 {
		return d.Paths(), nil // every approach skipped: nothing to plot
	}
	if err := d.Write("echo.png", func(path string) error { return throughputPlot(path, results) }); err != nil {
		return d.Paths(), err
	}
	if !slices.ContainsFunc(results, func(r Result) bool { return r.P99us > 0 }) {
		return d.Paths(), nil // no latency measured (no responses): nothing to plot
	}
	if err := d.Write("echo-latency.png", func(path string) error { return latencyPlot(path, results) }); err != nil {
		return d.Paths(), err
	}
	return d.Paths(), nil
}

// csvHeader names the CSV columns: Result's JSON field names, in order.
var csvHeader = []string{"approach", "datapath", "shape", "clients", "throughput_rps", "p50_us", "p99_us",
	"server_cpu_ns_per_req", "xdp_mode", "vs_raw_throughput", "vs_raw_server_cpu"}

// csvRows is results as CSV rows under csvHeader, floats in the shortest
// exact form. A field the JSON omits when zero (xdp_mode, vs_raw_*) is an
// empty cell, so that "no raw baseline" does not read as a ratio of 0.
func csvRows(results []Result) [][]string {
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	opt := func(x float64) string {
		if x == 0 {
			return ""
		}
		return num(x)
	}
	rows := make([][]string, 0, len(results))
	for _, r := range results {
		rows = append(rows, []string{r.Approach, r.Datapath, r.Shape, strconv.Itoa(r.Clients), num(r.ThroughputRPS),
			num(r.P50us), num(r.P99us), num(r.ServerNsPerReq), r.XDPMode, opt(r.VsRawThroughput), opt(r.VsRawServerCPU)})
	}
	return rows
}

// Plot size: wider than rpcbench's 7 inches, as the default run puts 9
// approaches x 6 shapes = 54 bars next to a legend.
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// style is an approach's fixed color and marker across runs and plots:
// the color by family (raw dark grey, the manual copies blues, Cornflakes
// oranges, the serialization libraries green, purple and gold), the
// marker telling the members of a family apart in the latency plot.
type style struct {
	color color.Color
	glyph draw.GlyphDrawer
}

var approachStyles = map[string]style{
	"raw":                 {rgb(0x4d4d4d), draw.BoxGlyph{}},
	"onecopy":             {rgb(0x6baed6), draw.CircleGlyph{}},
	"twocopy":             {rgb(0x08519c), draw.PyramidGlyph{}},
	"cornflakes-hybrid":   {rgb(0xe6550d), draw.BoxGlyph{}},
	"cornflakes-copy":     {rgb(0xfdae6b), draw.CircleGlyph{}},
	"cornflakes-zerocopy": {rgb(0x8c2d04), draw.PyramidGlyph{}},
	"protobuf":            {rgb(0x31a354), draw.BoxGlyph{}},
	"flatbuffers":         {rgb(0x756bb1), draw.CircleGlyph{}},
	"capnp":               {rgb(0xe7ba52), draw.PyramidGlyph{}},
}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

// styleOf is the style of the series' approach (a label with a datapath
// keeps its approach's), or a grey ring for an approach not in the table.
func styleOf(label string) style {
	a, _, _ := strings.Cut(label, " ")
	if st, ok := approachStyles[a]; ok {
		return st
	}
	return style{color.Gray{Y: 150}, draw.RingGlyph{}}
}

// grid is one value per (series, shape): a series is an approach, or an
// approach and datapath when results mix datapaths; shapes and series in
// Run's order. A missing value is 0 (Run gives one result per approach
// and shape; a duplicate overwrites).
type grid struct {
	title, shapes, series []string
	vals                  map[string][]float64
}

func gridOf(results []Result, value func(Result) float64) grid {
	dps := report.Distinct(results, func(r Result) string { return r.Datapath })
	label := func(r Result) string {
		if len(dps) > 1 {
			return r.Approach + " (" + r.Datapath + ")"
		}
		return r.Approach
	}
	g := grid{
		title:  []string{strings.Join(dps, ", "), loadOf(results)},
		shapes: report.Distinct(results, func(r Result) string { return r.Shape }),
		series: report.Distinct(results, label),
		vals:   map[string][]float64{},
	}
	for _, r := range results {
		l := label(r)
		if g.vals[l] == nil {
			g.vals[l] = make([]float64, len(g.shapes))
		}
		g.vals[l][slices.Index(g.shapes, r.Shape)] = value(r)
	}
	return g
}

// newPlot is a plot with the shapes as categories on X and the given title
// and Y label.
func (g grid) newPlot(what, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Echo %s over %s (%s)", what, g.title[0], g.title[1])
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = "message shape"
	p.Y.Label.Text = unit
	p.NominalX(g.shapes...)
	p.X.Min, p.X.Max = -0.5, float64(len(g.shapes))-0.5
	lines := plotter.NewGrid()
	lines.Vertical.Color = nil // horizontal lines only: read values off against Y
	p.Add(lines)
	return p
}

// throughputPlot writes echo.png: requests/s per shape as grouped bars,
// one bar per approach in a fixed color, on a linear axis from 0 so that
// bar heights compare as ratios (the run's vs_raw_throughput). Bars, not
// lines: shapes are categories, and a line between them would suggest an
// order that is not there.
func throughputPlot(path string, results []Result) error {
	g := gridOf(results, func(r Result) float64 { return r.ThroughputRPS / 1e3 })
	p := g.newPlot("throughput", "thousand requests/s")
	top := 0.0
	for _, vs := range g.vals {
		top = max(top, slices.Max(vs))
	}
	p.Y.Min, p.Y.Max = 0, top*1.05
	if top <= 0 {
		p.Y.Max = 1 // nothing measured: the plot still renders
	}
	p.Y.Tick.Marker = linTicks{}
	leg := newLegend()
	series := make([]report.BarSeries, len(g.series))
	for i, s := range g.series {
		series[i] = report.BarSeries{Label: s, Color: styleOf(s).color, Values: g.vals[s]}
	}
	report.AddGroupedBars(p, &leg, series, vg.Points(40)) // 40pt: a run of few approaches would get slabs
	return save(path, p, leg)
}

// latencyPlot writes echo-latency.png: p99 latency per shape, one marker
// per approach placed as the bars of echo.png, on a log axis. Log because
// tails span orders of magnitude (one slow library's would flatten every
// other approach on a linear axis); markers, not bars, because a bar's
// length means nothing on a log axis. An unmeasured p99 (0) is left out.
func latencyPlot(path string, results []Result) error {
	g := gridOf(results, func(r Result) float64 { return r.P99us })
	p := g.newPlot("p99 latency", "p99 latency (µs, log scale)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = report.LogTicks125{}
	lo, hi := math.Inf(1), 0.0
	leg := newLegend()
	// The markers of one shape span the share of its slot that its bars
	// fill in echo.png (at the bars' centres unless the bars are capped).
	slot := report.GroupFill / float64(len(g.series))
	for i, s := range g.series {
		var xys plotter.XYs
		for j, v := range g.vals[s] {
			if v > 0 {
				xys = append(xys, plotter.XY{X: float64(j) + (float64(i)-float64(len(g.series)-1)/2)*slot, Y: v})
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		st := styleOf(s)
		sc.GlyphStyle = draw.GlyphStyle{Color: st.color, Shape: st.glyph, Radius: vg.Points(4)}
		p.Add(sc)
		leg.Add(s, sc)
	}
	// Both ends on a labelled 1-2-5 tick, so the top of the range is read
	// off a label too.
	p.Y.Min, p.Y.Max = report.Round125(lo/1.1, false), report.Round125(hi*1.1, true)
	// Faint separators between the shapes: without bars, the markers of
	// neighbouring shapes would otherwise run into each other.
	for j := 1; j < len(g.shapes); j++ {
		sep, err := plotter.NewLine(plotter.XYs{{X: float64(j) - 0.5, Y: p.Y.Min}, {X: float64(j) - 0.5, Y: p.Y.Max}})
		if err != nil {
			return err
		}
		sep.Color, sep.Width = color.Gray{Y: 190}, vg.Points(0.75)
		sep.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(sep)
	}
	return save(path, p, leg)
}

// newLegend is the legend style of both plots.
func newLegend() plot.Legend {
	leg := plot.NewLegend()
	leg.TextStyle.Font.Size = vg.Points(11)
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(14)
	leg.Padding = vg.Points(2)
	return leg
}

// save draws p and, in a strip right of the axes, leg, and writes the PNG
// to path. Outside, because with 9 approaches a legend inside the data
// area would cover data whatever corner it took.
func save(path string, p *plot.Plot, leg plot.Legend) error {
	r := leg.Rectangle(draw.Canvas{})
	legendWidth := r.Max.X - r.Min.X + vg.Points(20)
	img := vgimg.New(plotWidth, plotHeight)
	c := draw.New(img)
	// save draws the Y label itself, centred on the data area: gonum pads
	// the plot's top for the label as if it sat at the arithmetic middle
	// of the Y range, near the top on a log axis, which left a wide gap
	// under the title of the latency plot.
	label := p.Y.Label
	p.Y.Label.Text = ""
	descent := label.TextStyle.FontExtents().Descent
	labelWidth := label.TextStyle.Height(label.Text) + descent + label.Padding
	pc := draw.Crop(c, labelWidth, -legendWidth, 0, 0)
	da := p.DataCanvas(pc)
	p.Draw(pc)
	sty := label.TextStyle
	sty.Rotation += math.Pi / 2
	c.FillText(sty, vg.Point{X: c.Min.X + label.TextStyle.Height(label.Text) - descent, Y: (da.Min.Y + da.Max.Y) / 2}, label.Text)
	// The legend's top is level with the top of the data area.
	leg.Draw(draw.Crop(c, plotWidth-legendWidth+vg.Points(12), 0, 0, da.Max.Y-c.Max.Y))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// linTicks labels a linear axis at multiples of 1, 2 or 5 times a power of
// ten, about six of them: gonum's default labels only about three.
type linTicks struct{}

// Ticks implements plot.Ticker.
func (linTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	mag := math.Pow(10, math.Floor(math.Log10((hi-lo)/6)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; (hi-lo)/step <= 7 {
			break
		}
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi*(1+1e-9); k++ {
		ticks = append(ticks, plot.Tick{Value: k * step, Label: strconv.FormatFloat(k*step, 'f', prec, 64)})
	}
	return ticks
}

// loadOf describes the offered load for the title: the clients of a closed
// loop or the rate of an open one, when all results share it.
func loadOf(results []Result) string {
	clients := report.Distinct(results, func(r Result) string { return strconv.Itoa(r.Clients) })
	rates := report.Distinct(results, func(r Result) string { return strconv.FormatFloat(r.Rate, 'g', -1, 64) })
	switch {
	case len(rates) == 1 && results[0].Rate > 0:
		return fmt.Sprintf("open loop, %.0f requests/s", results[0].Rate)
	case len(rates) == 1 && len(clients) == 1:
		return fmt.Sprintf("closed loop, %d outstanding requests", results[0].Clients)
	}
	return "mixed load"
}
