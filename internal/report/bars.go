package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BarSeries is one series of a grouped bar chart: its legend label, its
// colour and its value in each category, Values[c] at X = c on a nominal
// X axis. A value <= 0 has no bar (not measured, or not on a log axis).
type BarSeries struct {
	Label  string
	Color  color.Color
	Values []float64
}

// GroupFill is the share of a category's slot on the X axis that its bars
// fill together.
const GroupFill = 0.8

// AddGroupedBars adds series to p as grouped bars, one group per category
// with the series side by side in their order, and adds each series to
// leg. A bar is GroupFill of the slot over the number of series wide, at
// most maxWidth (few series would get slabs). Bars rise from the bottom of
// the Y axis, not from 0 as plotter.BarChart's do, so that they work on a
// log axis too.
func AddGroupedBars(p *plot.Plot, leg *plot.Legend, series []BarSeries, maxWidth vg.Length) {
	for i, s := range series {
		b := &bars{BarSeries: s, slot: i, slots: len(series), maxWidth: maxWidth}
		p.Add(b)
		leg.Add(s.Label, b)
	}
}

// bars is one series' bars; their width is set when drawing, once the
// data area's width is known.
type bars struct {
	BarSeries
	slot, slots int // this series' place among the slots of every group
	maxWidth    vg.Length
}

// Plot implements plot.Plotter.
func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	w := min(b.maxWidth, (trX(1)-trX(0))*GroupFill/vg.Length(b.slots))
	for i, v := range b.Values {
		if !(v > 0) {
			continue
		}
		x := trX(float64(i)) + (vg.Length(b.slot)-vg.Length(b.slots)/2)*w
		y := trY(max(v, p.Y.Min))
		pts := []vg.Point{{X: x, Y: c.Min.Y}, {X: x, Y: y}, {X: x + w, Y: y}, {X: x + w, Y: c.Min.Y}}
		c.FillPolygon(b.Color, c.ClipPolygonY(pts))
	}
}

// DataRange implements plot.DataRanger: the categories and values that
// have a bar.
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, v := range b.Values {
		if v > 0 {
			xmin, xmax = min(xmin, float64(i)), max(xmax, float64(i))
			ymin, ymax = min(ymin, v), max(ymax, v)
		}
	}
	return xmin, xmax, ymin, ymax
}

// Thumbnail implements plot.Thumbnailer (the legend's swatch).
func (b *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(b.Color, c.ClipPolygonY(pts))
}
