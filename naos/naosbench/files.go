package naosbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/cornflakes-go/cornflakes/internal/report"
)

// csvHeader names the CSV columns: Record's JSON field names, in order.
var csvHeader = []string{"structure", "size", "library", "transport", "op", "value", "unit"}

// WriteFiles writes recs to dir (created if missing) as naosbench.json and
// naosbench.csv, and one PNG per transport, structure and op
// (<transport>_<structure>_<op>.png: the value against the array size, one
// line per library, both axes logarithmic, as Naos' Figures 7 and 8). It
// returns the paths written.
func WriteFiles(dir string, recs []Record) ([]string, error) {
	d, err := report.Create(dir, "naosbench")
	if err != nil {
		return nil, err
	}
	if err := d.JSON("naosbench.json", recs); err != nil {
		return d.Paths(), err
	}
	rows := make([][]string, 0, len(recs))
	for _, r := range recs {
		rows = append(rows, []string{r.Structure, strconv.Itoa(r.Size), r.Library, r.Transport, r.Op,
			strconv.FormatFloat(r.Value, 'g', -1, 64), r.Unit})
	}
	if err := d.CSV("naosbench.csv", csvHeader, rows); err != nil {
		return d.Paths(), err
	}
	for _, tr := range report.Distinct(recs, func(r Record) string { return r.Transport }) {
		for _, st := range report.Distinct(recs, func(r Record) string { return r.Structure }) {
			for _, op := range []string{"latency", "throughput", "cpu"} {
				p, ok, err := sizePlot(recs, tr, st, op)
				if err != nil {
					return d.Paths(), fmt.Errorf("naosbench: %w", err)
				}
				if !ok {
					continue
				}
				name := tr + "_" + st + "_" + op + ".png"
				if err := d.Write(name, func(path string) error { return p.Save(7*vg.Inch, 4.5*vg.Inch, path) }); err != nil {
					return d.Paths(), err
				}
			}
		}
	}
	return d.Paths(), nil
}

func sizePlot(recs []Record, tr, st, op string) (*plot.Plot, bool, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, %s over %s", op, st, tr)
	p.X.Label.Text = "array size (elements)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Tick.Marker = report.LogTicks125{}
	p.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), 0.0
	found := false
	for i, lib := range report.Distinct(recs, func(r Record) string { return r.Library }) {
		var xys plotter.XYs
		for _, r := range recs {
			if r.Transport == tr && r.Structure == st && r.Op == op && r.Library == lib && r.Value > 0 {
				xys = append(xys, plotter.XY{X: float64(r.Size), Y: r.Value})
				lo, hi = min(lo, r.Value), max(hi, r.Value)
				p.Y.Label.Text = r.Unit
			}
		}
		if len(xys) == 0 {
			continue
		}
		found = true
		sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, false, err
		}
		line.Color, points.Color, points.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(lib, line, points)
	}
	if found {
		p.Y.Min, p.Y.Max = report.Round125(lo, false), report.Round125(hi, true)
		p.Legend.Top = op == "throughput"
	}
	return p, found, nil
}

// WriteJSON writes recs as one indented JSON array.
func WriteJSON(w io.Writer, recs []Record) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(recs)
}

// WriteTable writes recs as an aligned text table.
func WriteTable(w io.Writer, recs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "structure\tsize\tlibrary\ttransport\top\tvalue\tunit\t")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.1f\t%s\t\n", r.Structure, r.Size, r.Library, r.Transport, r.Op, r.Value, r.Unit)
	}
	return tw.Flush()
}
