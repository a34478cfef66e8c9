package microbench

import (
	"bytes"
	"encoding/json"
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

	"github.com/cornflakes-go/cornflakes/internal/report"
)

// WriteFiles writes recs to dir (created if missing) so that a run leaves data and plots
// behind: microbench.json (the records exactly as --json prints them, WriteJSON),
// microbench.csv (the same records, one row each, columns named and ordered as the JSON
// fields) and, for every op the run measured, microbench-<op>.png (ns/op per shape, one bar
// per library/mode). It returns the paths written.
func WriteFiles(dir string, recs []Record) ([]string, error) {
	d, err := report.Create(dir, "microbench")
	if err != nil {
		return nil, err
	}
	// The CSV and the plots use the records as the JSON holds them (rounded, with
	// vs_best_baseline), so that the three files agree.
	var js bytes.Buffer
	if err := WriteJSON(&js, recs); err != nil {
		return nil, err
	}
	var out []Record
	if err := json.Unmarshal(js.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("microbench: re-reading the JSON records: %w", err)
	}
	if err := d.Write("microbench.json", func(path string) error { return os.WriteFile(path, js.Bytes(), 0o644) }); err != nil {
		return d.Paths(), err
	}
	if err := d.CSV("microbench.csv", csvHeader, csvRows(out)); err != nil {
		return d.Paths(), err
	}
	for _, op := range report.Distinct(out, func(r Record) string { return r.Op }) {
		if err := d.Write("microbench-"+fileSafe(op)+".png", func(path string) error { return writeOpPlot(path, op, out) }); err != nil {
			return d.Paths(), err
		}
	}
	return d.Paths(), nil
}

// csvHeader names the CSV columns: Record's JSON field names, in order.
var csvHeader = []string{"library", "mode", "shape", "op", "ns_per_op", "allocs_per_op", "bytes_per_op", "vs_best_baseline"}

// csvRows is recs as CSV rows under csvHeader.
func csvRows(recs []Record) [][]string {
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	rows := make([][]string, 0, len(recs))
	for _, r := range recs {
		ratio := "" // absent from the JSON too: the run measured no baseline
		if r.VsBestBaseline != 0 {
			ratio = num(r.VsBestBaseline)
		}
		rows = append(rows, []string{r.Library, r.Mode, r.Shape, r.Op, num(r.NsPerOp), num(r.AllocsPerOp), num(r.BytesPerOp), ratio})
	}
	return rows
}

// fileSafe keeps letters, digits, '-' and '_' of s, so that an op name cannot leave dir.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// opTitles describe each op in its plot's title.
var opTitles = map[string]string{
	string(OpSerialize): "serialize: build a message from the shape's values, serialize it",
	string(OpDecode):    "decode: decode a message, read every value",
	string(OpEcho):      "echo: decode, build a response from the decoded values, serialize it",
}

// Plot geometry. A full run has 22 shapes × 7 library/modes = 154 bars per plot: the plot grows
// wider with the number of bars (barWidth each) rather than squeezing them, and the legend gets
// its own strip right of the axes so that it never covers a bar.
const (
	plotHeight   = 5 * vg.Inch
	minPlotWidth = 7 * vg.Inch   // without the legend strip
	barWidth     = vg.Length(5)  // points; a bar's width when the plot is as narrow as it may be
	maxBarWidth  = vg.Length(24) // caps bars in a run with few shapes and libraries
	axesMargin   = 1.1 * vg.Inch // Y axis, its labels and the padding around the data area
)

// writeOpPlot writes op's plot of recs to path as PNG: grouped bars of ns/op, one group per
// shape (X), one bar per library/mode, on a log Y axis. Log, because the libraries differ by
// up to three orders of magnitude on one shape (protobuf-go's echo against vtprotobuf's): on a
// linear axis every bar but protobuf-go's would be a sliver.
func writeOpPlot(path, op string, recs []Record) error {
	var rs []Record
	for _, r := range recs {
		if r.Op == op && r.NsPerOp > 0 {
			rs = append(rs, r)
		}
	}
	shapes := report.Distinct(rs, func(r Record) string { return r.Shape })
	labels := report.Distinct(rs, func(r Record) string { return label(r.Library, r.Mode) })
	shapeIdx := map[string]int{}
	for i, s := range shapes {
		shapeIdx[s] = i
	}

	p := plot.New()
	title := opTitles[op]
	if title == "" {
		title = op
	}
	p.Title.Text = "microbench " + title + " (ns/op per shape)"
	p.Y.Label.Text = "ns/op (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = report.LogTicks125{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil // shapes are categories: horizontal lines only, to read values
	p.Add(grid)

	groupW := vg.Length(len(labels)) * barWidth / report.GroupFill // a shape's slot at the narrowest
	lo, hi := math.Inf(1), 0.0
	colors := labelColors(labels)
	series := make([]report.BarSeries, len(labels))
	for j, lab := range labels {
		series[j] = report.BarSeries{Label: lab, Color: colors[lab], Values: make([]float64, len(shapes))}
	}
	for _, r := range rs {
		series[slices.Index(labels, label(r.Library, r.Mode))].Values[shapeIdx[r.Shape]] = r.NsPerOp
		lo, hi = min(lo, r.NsPerOp), max(hi, r.NsPerOp)
	}
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(14)
	legend.Padding = vg.Points(2)
	report.AddGroupedBars(p, &legend, series, maxBarWidth)
	// Wide enough for every shape's bars, and for the title, which is centred over the axes.
	titleW := p.Title.TextStyle.Width(p.Title.Text) + vg.Inch/2
	legendW := legend.ThumbnailWidth + legend.TextStyle.Width(" ") + legend.TextStyle.Width(longest(labels)) + vg.Points(12)
	width := max(minPlotWidth, vg.Length(len(shapes))*groupW+axesMargin, titleW) + legendW
	if len(shapes) > 0 {
		slotW := (width - legendW - axesMargin) / vg.Length(len(shapes))
		p.NominalX(shapes...)
		p.X.Min, p.X.Max = -0.5, float64(len(shapes))-0.5
		p.Y.Min, p.Y.Max = report.Round125(lo/1.2, false), report.Round125(hi*1.2, true) // labelled ends
		if p.X.Tick.Label.Width(longest(shapes)) > slotW {
			p.X.Tick.Label.Rotation = math.Pi / 6
			p.X.Tick.Label.XAlign = draw.XRight
			p.X.Tick.Label.YAlign = draw.YCenter
		}
	} else {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 1, 10 // empty plot still renders
	}

	c, err := draw.NewFormattedCanvas(width, plotHeight, "png")
	if err != nil {
		return err
	}
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
	// The legend starts level with the top of the data area, under the title.
	top := p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + vg.Points(6)
	legend.Draw(draw.Crop(dc, width-legendW+vg.Points(6), 0, 0, -top))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// palette is the Okabe-Ito colour-blind-safe palette (black lightened to gray), blues and green
// first for Cornflakes' modes, warm colours for the baselines.
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xb2, 0xff}, // blue
	color.RGBA{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	color.RGBA{0x00, 0x9e, 0x73, 0xff}, // bluish green
	color.RGBA{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	color.RGBA{0xe6, 0x9f, 0x00, 0xff}, // orange
	color.RGBA{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	color.RGBA{0x59, 0x59, 0x59, 0xff}, // gray
	color.RGBA{0xf0, 0xe4, 0x42, 0xff}, // yellow
}

// labelColors gives every built-in library/mode the same colour in every plot and run (its
// place in Libraries), whichever subset a run measured; other labels take the colours after.
func labelColors(labels []string) map[string]color.Color {
	var all []string
	for _, l := range Libraries() {
		for _, m := range l.Modes() {
			all = append(all, label(l.Name(), m))
		}
	}
	colors := map[string]color.Color{}
	for _, lab := range append(all, labels...) {
		if _, ok := colors[lab]; !ok {
			colors[lab] = palette[len(colors)%len(palette)]
		}
	}
	return colors
}

func longest(ss []string) string {
	l := ""
	for _, s := range ss {
		if len(s) > len(l) {
			l = s
		}
	}
	return l
}
