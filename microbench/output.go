package microbench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// WriteJSON writes recs as one JSON array, one record per line, with numbers rounded to two
// decimals and each record's time as a ratio to the fastest baseline of its shape and op
// (vs_best_baseline, as the table's ratio column).
func WriteJSON(w io.Writer, recs []Record) error {
	best := bestBaselines(recs)
	bw := bufio.NewWriter(w)
	bw.WriteString("[")
	for i, r := range recs {
		if b, ok := best[shapeOp{r.Shape, r.Op}]; ok && b > 0 {
			r.VsBestBaseline = round2(r.NsPerOp / b)
		}
		r.NsPerOp = round2(r.NsPerOp)
		r.AllocsPerOp = round2(r.AllocsPerOp)
		r.BytesPerOp = round2(r.BytesPerOp)
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
		bw.Write(b)
	}
	bw.WriteString("\n]\n")
	return bw.Flush()
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// WriteTable writes recs as a human-readable table grouped by shape, then op, with each row's
// time as a ratio to the fastest baseline (any library but cornflakes) of the same shape and op:
// below 1.00 is faster than every baseline.
func WriteTable(w io.Writer, recs []Record) error {
	best := bestBaselines(recs)
	var shapes []string
	seenShape := map[string]bool{}
	for _, r := range recs {
		if !seenShape[r.Shape] {
			seenShape[r.Shape] = true
			shapes = append(shapes, r.Shape)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, shape := range shapes {
		if i > 0 {
			fmt.Fprintln(tw, "\t\t\t\t\t\t")
		}
		fmt.Fprintf(tw, "%s\top\tns/op\tratio\tallocs/op\tB/op\t\n", shape)
		for _, op := range Ops() {
			for _, r := range recs {
				if r.Shape != shape || r.Op != string(op) {
					continue
				}
				ratio := "-"
				if b, ok := best[shapeOp{shape, r.Op}]; ok && b > 0 {
					ratio = fmt.Sprintf("%.2f", r.NsPerOp/b)
				}
				fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%.1f\t%.0f\t\n", label(r.Library, r.Mode), r.Op, r.NsPerOp, ratio, r.AllocsPerOp, r.BytesPerOp)
			}
		}
	}
	return tw.Flush()
}

type shapeOp struct{ shape, op string }

// bestBaselines is the fastest baseline's (any library but cornflakes)
// time per (shape, op) of recs.
func bestBaselines(recs []Record) map[shapeOp]float64 {
	best := map[shapeOp]float64{}
	for _, r := range recs {
		if r.Library == "cornflakes" {
			continue
		}
		k := shapeOp{r.Shape, r.Op}
		if b, ok := best[k]; !ok || r.NsPerOp < b {
			best[k] = r.NsPerOp
		}
	}
	return best
}
