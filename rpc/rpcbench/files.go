package rpcbench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/cornflakes-go/cornflakes/internal/report"
)

// WriteFiles writes recs to dir (created if missing) as rpcbench.json and
// rpcbench.csv, and plots the sweeps the run measured as PNG:
// loss_bw.png (bandwidth against the loss rate, eRPC Table 4),
// sessions.png (small-RPC rate against the session count, eRPC §6.3) and
// factor.png (small-RPC rate with each optimization off, eRPC Table 3).
// It returns the paths written.
func WriteFiles(dir string, recs []Record) ([]string, error) {
	d, err := report.Create(dir, "rpcbench")
	if err != nil {
		return nil, err
	}
	if err := d.JSON("rpcbench.json", recs); err != nil {
		return d.Paths(), err
	}
	if err := d.CSV("rpcbench.csv", csvHeader, csvRows(recs)); err != nil {
		return d.Paths(), err
	}
	plots := []struct {
		name string
		plot func([]Record) (*plot.Plot, bool, error)
	}{
		{"loss_bw.png", lossPlot},
		{"sessions.png", sessionsPlot},
		{"factor.png", factorPlot},
	}
	for _, pl := range plots {
		p, ok, err := pl.plot(recs)
		if err != nil {
			return d.Paths(), fmt.Errorf("rpcbench: %s: %w", pl.name, err)
		}
		if !ok {
			continue // the run did not measure this sweep
		}
		if err := d.Write(pl.name, func(path string) error { return p.Save(plotWidth, plotHeight, path) }); err != nil {
			return d.Paths(), err
		}
	}
	return d.Paths(), nil
}

// Plot size.
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// csvRows is recs as CSV rows under csvHeader.
func csvRows(recs []Record) [][]string {
	rows := make([][]string, 0, len(recs))
	for _, r := range recs {
		rows = append(rows, []string{r.Test, r.Variant, r.Datapath, strconv.FormatFloat(r.Value, 'g', -1, 64), r.Unit})
	}
	return rows
}

// csvHeader names the CSV columns: Record's JSON field names, in order.
var csvHeader = []string{"test", "variant", "datapath", "value", "unit"}

// lossPlot: loss_bw's Gbit/s against the loss rate (log scale), one line
// per retransmission mode, each mode's lossless bandwidth as a dashed line.
func lossPlot(recs []Record) (*plot.Plot, bool, error) {
	p := plot.New()
	p.Title.Text = "8 MiB requests under injected loss (memnet)"
	p.X.Label.Text = "packet loss rate"
	p.Y.Label.Text = "goodput (Gbit/s)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: 1}
	p.Add(plotter.NewGrid())
	p.Legend.Left = true // bandwidth falls with loss: the lower left stays free
	lo, hi, top := math.Inf(1), 0.0, 0.0
	found := false
	for i, mode := range []string{"sack", "gobackn"} {
		var xys plotter.XYs
		lossless := -1.0
		for _, r := range recs {
			m, rate, ok := strings.Cut(r.Variant, "/")
			if r.Test != "loss_bw" || r.Unit != "Gbit/s" || !ok || m != mode {
				continue
			}
			x, err := strconv.ParseFloat(rate, 64)
			if err != nil {
				continue
			}
			top = max(top, r.Value)
			if x == 0 {
				lossless = r.Value
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: r.Value})
			lo, hi = min(lo, x), max(hi, x)
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
		line.Width = vg.Points(1.5)
		p.Add(line, points)
		p.Legend.Add(mode, line, points)
		if lossless >= 0 {
			ref, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lossless}, {X: hi, Y: lossless}})
			if err != nil {
				return nil, false, err
			}
			ref.Color, ref.Dashes = plotutil.Color(i), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(ref)
			p.Legend.Add(mode+" lossless", ref)
		}
	}
	p.Y.Min, p.Y.Max = 0, top*1.1
	return p, found, nil
}

// sessionsPlot: the small-RPC rate against the number of sessions it is
// spread over (log scale).
func sessionsPlot(recs []Record) (*plot.Plot, bool, error) {
	var xys plotter.XYs
	for _, r := range recs {
		if r.Test != "sessions" || r.Unit != "rps" {
			continue
		}
		n, err := strconv.Atoi(r.Variant)
		if err != nil || n < 1 {
			continue
		}
		xys = append(xys, plotter.XY{X: float64(n), Y: r.Value / 1e3})
	}
	if len(xys) == 0 {
		return nil, false, nil
	}
	sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
	p := plot.New()
	p.Title.Text = "Session scalability: small RPCs spread over n sessions to one endpoint"
	p.X.Label.Text = "sessions"
	p.Y.Label.Text = "thousand requests/s"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, false, err
	}
	line.Width = vg.Points(1.5)
	p.Add(line, points)
	p.Y.Min, p.Y.Max = 0, maxY(xys)*1.1
	return p, true, nil
}

func maxY(xys plotter.XYs) float64 {
	m := 0.0
	for _, xy := range xys {
		m = max(m, xy.Y)
	}
	return m
}

// factorPlot: the small-RPC rate with every optimization on ("all") and
// with each one off, as bars.
func factorPlot(recs []Record) (*plot.Plot, bool, error) {
	var names []string
	var vals plotter.Values
	for _, r := range recs {
		if r.Test != "factor" || r.Unit != "rps" {
			continue
		}
		names = append(names, r.Variant)
		vals = append(vals, r.Value/1e3)
	}
	if len(vals) == 0 {
		return nil, false, nil
	}
	p := plot.New()
	p.Title.Text = "Factor analysis: small-RPC rate with one optimization off"
	p.Y.Label.Text = "thousand requests/s"
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return nil, false, err
	}
	bars.Color = plotutil.Color(0)
	p.Add(plotter.NewGrid(), bars)
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = -0.9
	top := 0.0
	for _, v := range vals {
		top = max(top, v)
	}
	p.Y.Min, p.Y.Max = 0, top*1.1
	return p, true, nil
}
