package bench

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/cornflakes-go/cornflakes/internal/report"
)

// Plot size.
const (
	PlotWidth  = 7 * vg.Inch
	PlotHeight = 4.5 * vg.Inch
)

// WritePlot renders one throughput-latency plot of series as PNG to w: p99
// latency (µs, log scale) against achieved load, one line per series through
// its Curve (one point per offered load, in order of offered load; the other
// attempts of re-run points as small unconnected markers), and a dashed line
// at the SLO.
func WritePlot(w io.Writer, title string, series []Series) error {
	p := plot.New()
	p.Title.Text = title
	unit := "requests"
	if len(series) > 0 && series[0].Unit == "objects" {
		unit = "requests (segments)"
	}
	p.X.Label.Text = fmt.Sprintf("achieved load (thousand %s/s)", unit)
	p.Y.Label.Text = "p99 latency (µs)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = report.LogTicks125{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	minY, maxY, maxX, slo := math.Inf(1), 0.0, 0.0, 0.0
	for i, s := range series {
		curve, extra := s.Curve()
		xys := make(plotter.XYs, 0, len(curve))
		for _, pt := range curve {
			xys = append(xys, plotter.XY{X: pt.AchievedRPS / 1e3, Y: pt.P99us})
			minY, maxY, maxX = min(minY, pt.P99us), max(maxY, pt.P99us), max(maxX, pt.AchievedRPS/1e3)
		}
		var others plotter.XYs
		for _, pt := range extra {
			others = append(others, plotter.XY{X: pt.AchievedRPS / 1e3, Y: pt.P99us})
			minY, maxY, maxX = min(minY, pt.P99us), max(maxY, pt.P99us), max(maxX, pt.AchievedRPS/1e3)
		}
		slo = max(slo, s.SLOP99us)
		if len(xys) == 0 {
			continue
		}
		line, scatter, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		line.Dashes = plotutil.Dashes(i / 7)
		scatter.Color = plotutil.Color(i)
		scatter.Shape = plotutil.Shape(i)
		p.Add(line, scatter)
		p.Legend.Add(s.Name(), line, scatter)
		if len(others) > 0 {
			// The attempts the line does not go through (a re-run's
			// discarded attempt): the same marker, smaller, unconnected.
			sc, err := plotter.NewScatter(others)
			if err != nil {
				return err
			}
			sc.Color, sc.Shape, sc.Radius = plotutil.Color(i), plotutil.Shape(i), vg.Points(1.5)
			p.Add(sc)
		}
	}
	if slo > 0 && maxX > 0 {
		sl, err := plotter.NewLine(plotter.XYs{{X: 0, Y: slo}, {X: maxX * 1.05, Y: slo}})
		if err != nil {
			return err
		}
		sl.Color = color.Gray{Y: 100}
		sl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(sl)
		p.Legend.Add(fmt.Sprintf("SLO p99 %.0f µs", slo), sl)
		minY, maxY = min(minY, slo), max(maxY, slo)
	}
	if maxY > 0 {
		p.Y.Min, p.Y.Max = minY/1.5, maxY*4 // headroom for the legend
		p.X.Min, p.X.Max = 0, maxX*1.05
	} else {
		p.Y.Min, p.Y.Max = 1, 1000 // empty plot still renders
	}
	p.Legend.ThumbnailWidth = vg.Points(20)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	wt, err := p.WriterTo(PlotWidth, PlotHeight, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// WritePlots writes one PNG per group of series (experiment and label or
// workload) into dir, named <prefix><group>.png, and returns the paths.
func WritePlots(dir, prefix string, series []Series) ([]string, error) {
	names, members := Groups(series)
	var paths []string
	for i, g := range names {
		path := filepath.Join(dir, prefix+fileSafe(g)+".png")
		f, err := os.Create(path)
		if err != nil {
			return paths, err
		}
		err = WritePlot(f, g, members[i])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return paths, fmt.Errorf("bench: plot %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Curve returns the points the plot's line of s goes through: one per
// offered load, sorted by offered load (closed-loop points, whose offered
// load is 0, last, by achieved load), and the other attempts at the same
// loads (SweepConfig.Retries re-runs a point that failed only in its tail)
// in the order run. Of the attempts at one load the curve keeps the one the
// sweep counted: the passing attempt with the highest achieved load, or, if
// none passed, the last one. Points without a p99 are left out of both.
func (s Series) Curve() (curve, others []Point) {
	idx := map[float64]int{} // offered load → index in curve
	for _, pt := range s.Points {
		if !(pt.P99us > 0) {
			continue
		}
		key := pt.OfferedRPS
		if key == 0 {
			key = -1 - float64(len(curve)) // each closed-loop point is its own
		}
		i, seen := idx[key]
		if !seen {
			idx[key] = len(curve)
			curve = append(curve, pt)
			continue
		}
		cur := curve[i]
		better := (pt.MeetsSLO && (!cur.MeetsSLO || pt.AchievedRPS > cur.AchievedRPS)) || (!pt.MeetsSLO && !cur.MeetsSLO)
		if better {
			curve[i], pt = pt, cur
		}
		others = append(others, pt)
	}
	slices.SortStableFunc(curve, func(a, b Point) int {
		switch {
		case a.OfferedRPS == 0 && b.OfferedRPS == 0:
			return cmp.Compare(a.AchievedRPS, b.AchievedRPS)
		case a.OfferedRPS == 0:
			return 1
		case b.OfferedRPS == 0:
			return -1
		}
		return cmp.Compare(a.OfferedRPS, b.OfferedRPS)
	})
	return curve, others
}
