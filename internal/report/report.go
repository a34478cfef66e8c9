// Package report writes the files a benchmark run leaves behind (its data as
// JSON and CSV, its plots as PNG) into one directory, and holds the plot
// helpers the benchmark commands share.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
)

// Dir is a run's output directory: it records the paths written, in order.
type Dir struct {
	dir, who string
	paths    []string
}

// Create makes dir (and its parents) for a run of who (the command, named
// in errors).
func Create(dir, who string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", who, err)
	}
	return &Dir{dir: dir, who: who}, nil
}

// Write writes the file name with write(path) and records its path; an
// error names the file.
func (d *Dir) Write(name string, write func(path string) error) error {
	path := filepath.Join(d.dir, name)
	if err := write(path); err != nil {
		return fmt.Errorf("%s: %s: %w", d.who, path, err)
	}
	d.paths = append(d.paths, path)
	return nil
}

// JSON writes v as indented JSON with a final newline.
func (d *Dir) JSON(name string, v any) error {
	return d.Write(name, func(path string) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(path, append(b, '\n'), 0o644)
	})
}

// Stream writes the file name through write, which gets the open file.
func (d *Dir) Stream(name string, write func(io.Writer) error) error {
	return d.Write(name, func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	})
}

// CSV writes a CSV file: the header row, then rows.
func (d *Dir) CSV(name string, header []string, rows [][]string) error {
	return d.Stream(name, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write(header)
		_ = cw.WriteAll(rows) // WriteAll flushes; its error is the writer's
		return cw.Error()
	})
}

// Paths returns the paths written so far.
func (d *Dir) Paths() []string { return d.paths }

// Distinct returns key of every element of xs, each once, in the order of
// first appearance (a run's order: the categories of a plot's axis).
func Distinct[T any](xs []T, key func(T) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if k := key(x); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// LogTicks125 labels a log axis at 1, 2 and 5 times powers of ten, with
// unlabelled ticks at the other multiples, so that a range of one or two
// decades still gets several labels; a range narrower still (fewer than
// three labels) gets every tick labelled.
type LogTicks125 struct{}

// Ticks implements plot.Ticker.
func (LogTicks125) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	var ticks []plot.Tick
	labelled := 0
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo || v > hi {
				continue
			}
			label := ""
			if m == 1 || m == 2 || m == 5 {
				label = formatTick(v)
				labelled++
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	if labelled < 3 {
		for i := range ticks {
			ticks[i].Label = formatTick(ticks[i].Value)
		}
	}
	return ticks
}

// formatTick prints a tick value without an exponent (1000000, 0.0002).
func formatTick(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Round125 rounds v > 0 down (or, with up, up) to 1, 2 or 5 times a power
// of ten: a labelled tick of LogTicks125, for a log axis's ends.
func Round125(v float64, up bool) float64 {
	base := math.Pow(10, math.Floor(math.Log10(v)))
	if up {
		for _, m := range []float64{1, 2, 5} {
			if m*base >= v {
				return m * base
			}
		}
		return 10 * base
	}
	for _, m := range []float64{5, 2, 1} {
		if m*base <= v {
			return m * base
		}
	}
	return base
}
