package bench

import (
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
// latency (µs, log scale) against achieved load, one line per series, and a
// dashed line at the SLO.
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
		pts := slices.Clone(s.Points)
		slices.SortFunc(pts, func(a, b Point) int {
			switch {
			case a.OfferedRPS < b.OfferedRPS:
				return -1
			case a.OfferedRPS > b.OfferedRPS:
				return 1
			}
			return 0
		})
		xys := make(plotter.XYs, 0, len(pts))
		for _, pt := range pts {
			if pt.P99us <= 0 {
				continue
			}
			xys = append(xys, plotter.XY{X: pt.AchievedRPS / 1e3, Y: pt.P99us})
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
