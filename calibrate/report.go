package calibrate

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// cell returns the cell for (entries, total) or nil.
func (r *Result) cell(entries, total int) *Cell {
	for i := range r.Cells {
		if r.Cells[i].Entries == entries && r.Cells[i].TotalBytes == total {
			return &r.Cells[i]
		}
	}
	return nil
}

// WriteTable writes the grid of scatter-gather gains (percent; positive:
// scatter-gather is faster) with entries as rows and total sizes as
// columns, then the recommended threshold.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "scatter-gather vs copy on %s: server CPU per response, gain = copy/sg - 1 (%%; >0: scatter-gather wins)\n", r.Datapath)
	fmt.Fprintf(w, "LLC %d KiB (%s), working set %d MiB\n", r.LLCBytes>>10, r.LLCSource, r.WorkingSetBytes>>20)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "entries \\ total B\t")
	for _, t := range r.TotalSizes {
		fmt.Fprintf(tw, "%d\t", t)
	}
	fmt.Fprintln(tw)
	for _, e := range r.Entries {
		fmt.Fprintf(tw, "%d\t", e)
		for _, t := range r.TotalSizes {
			if c := r.cell(e, t); c != nil {
				fmt.Fprintf(tw, "%+.1f\t", c.GainPct)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.RecommendedThreshold < 0 {
		_, err := fmt.Fprintf(w, "recommended threshold: none (scatter-gather never wins consistently: copy everything)\n")
		return err
	}
	_, err := fmt.Fprintf(w, "recommended threshold: %d bytes per field\n", r.RecommendedThreshold)
	return err
}

// grid adapts a Result to plotter.GridXYZ: columns are total sizes, rows
// entry counts (by index, labelled with ticks).
type grid struct{ r *Result }

func (g grid) Dims() (c, r int) { return len(g.r.TotalSizes), len(g.r.Entries) }
func (g grid) Z(c, r int) float64 {
	if cl := g.r.cell(g.r.Entries[r], g.r.TotalSizes[c]); cl != nil {
		return cl.GainPct
	}
	return math.NaN()
}
func (g grid) X(c int) float64 { return float64(c) }
func (g grid) Y(r int) float64 { return float64(r) }

type ticks []string

func (t ticks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for i, s := range t {
		out = append(out, plot.Tick{Value: float64(i), Label: s})
	}
	return out
}

// WritePNG draws the heatmap of gains (blue: copy wins, red: scatter-gather
// wins), each cell labelled with its percentage.
func (r *Result) WritePNG(path string) error {
	p := plot.New()
	th := "none"
	if r.RecommendedThreshold >= 0 {
		th = strconv.Itoa(r.RecommendedThreshold) + " B"
	}
	p.Title.Text = fmt.Sprintf("Scatter-gather gain over copy (%%), %s datapath — recommended threshold %s", r.Datapath, th)
	p.X.Label.Text = "total response size (bytes)"
	p.Y.Label.Text = "number of entries"
	lim := 1.0
	for _, c := range r.Cells {
		if !math.IsNaN(c.GainPct) {
			lim = math.Max(lim, math.Abs(c.GainPct))
		}
	}
	pal := moreland.SmoothBlueRed()
	pal.SetMin(-lim)
	pal.SetMax(lim)
	hm := plotter.NewHeatMap(grid{r}, pal.Palette(255))
	hm.Min, hm.Max = -lim, lim
	p.Add(hm)
	var xt, yt ticks
	for _, t := range r.TotalSizes {
		xt = append(xt, strconv.Itoa(t))
	}
	for _, e := range r.Entries {
		yt = append(yt, strconv.Itoa(e))
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
	var xys plotter.XYs
	var labels []string
	for ri, e := range r.Entries {
		for ci, t := range r.TotalSizes {
			if c := r.cell(e, t); c != nil {
				xys = append(xys, plotter.XY{X: float64(ci), Y: float64(ri)})
				labels = append(labels, fmt.Sprintf("%+.0f%%\n%dB", c.GainPct, c.EntryBytes))
			}
		}
	}
	if len(xys) > 0 {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Color = color.Black
			l.TextStyle[i].XAlign = draw.XCenter
			l.TextStyle[i].YAlign = draw.YCenter
			l.TextStyle[i].Font.Size = vg.Points(8)
		}
		p.Add(l)
	}
	p.X.Min, p.X.Max = -0.5, float64(len(r.TotalSizes))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(r.Entries))-0.5
	return p.Save(10*vg.Inch, 6*vg.Inch, path)
}

// csvHeader names WriteCSV's columns: Cell's JSON fields, in order.
var csvHeader = []string{"entries", "total_bytes", "entry_bytes", "copy_ns_per_resp", "sg_ns_per_resp",
	"copy_rps", "sg_rps", "sg_gain_pct", "copy_responses", "sg_responses", "zero_copy_entries"}

// WriteCSV writes one row per measured cell, with a header row of Cell's
// JSON field names: the sweep as a spreadsheet or plotting tool reads it.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, c := range r.Cells {
		_ = cw.Write([]string{strconv.Itoa(c.Entries), strconv.Itoa(c.TotalBytes), strconv.Itoa(c.EntryBytes),
			f(c.CopyNsPerResp), f(c.SGNsPerResp), f(c.CopyRPS), f(c.SGRPS), f(c.GainPct),
			strconv.FormatUint(c.CopyResponses, 10), strconv.FormatUint(c.SGResponses, 10), strconv.FormatUint(c.ZeroCopyEntries, 10)})
	}
	cw.Flush()
	return cw.Error()
}
