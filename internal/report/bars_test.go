package report

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestAddGroupedBars draws two series over three categories on a log axis,
// writes the PNG and reads it back: every bar is in its category's group,
// in series order, as high as its value, and a value of 0 has no bar.
func TestAddGroupedBars(t *testing.T) {
	red, blue := color.RGBA{R: 255, A: 255}, color.RGBA{B: 255, A: 255}
	series := []BarSeries{
		{Label: "a", Color: red, Values: []float64{10, 1000, 0}},
		{Label: "b", Color: blue, Values: []float64{100, 20, 50}},
	}
	p := plot.New()
	p.NominalX("x", "y", "z")
	p.X.Min, p.X.Max = -0.5, 2.5
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = LogTicks125{}
	leg := plot.NewLegend()
	const maxWidth = vg.Length(20)
	AddGroupedBars(p, &leg, series, maxWidth)
	if p.Y.Min != 10 || p.Y.Max != 1000 || p.X.Min != -0.5 || p.X.Max != 2.5 {
		t.Errorf("axes X %v..%v, Y %v..%v after adding: want -0.5..2.5 and the values' 10..1000",
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
	}
	p.Y.Min = 5

	img := vgimg.New(6*vg.Inch, 3*vg.Inch)
	c := draw.New(img)
	da := p.DataCanvas(c)
	p.Draw(c)
	path := filepath.Join(t.TempDir(), "bars.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}

	// at is the pixel at (x, y) in points, y up from the bottom as in vg.
	scale := float64(got.Bounds().Dx()) / (6 * 72)
	at := func(x, y vg.Length) color.Color {
		return got.At(int(float64(x)*scale), got.Bounds().Dy()-1-int(float64(y)*scale))
	}
	same := func(a, b color.Color) bool {
		r1, g1, b1, _ := a.RGBA()
		r2, g2, b2, _ := b.RGBA()
		return r1 == r2 && g1 == g2 && b1 == b2
	}
	trX, trY := p.Transforms(&da)
	if (trX(1)-trX(0))*GroupFill/2 <= maxWidth {
		t.Fatal("the slots have no room for bars wider than maxWidth: the cap is not tested")
	}
	w := maxWidth
	for s, ser := range series {
		for cat, v := range ser.Values {
			mid := trX(float64(cat)) + (vg.Length(s)-0.5)*w // centre of series s's bar
			low := at(mid, da.Min.Y+2)
			if v == 0 {
				if same(low, ser.Color) {
					t.Errorf("series %s, category %d: a bar for value 0", ser.Label, cat)
				}
				continue
			}
			if !same(low, ser.Color) {
				t.Errorf("series %s, category %d: no bar at x=%v (found %v)", ser.Label, cat, mid, low)
			}
			top := trY(v)
			if !same(at(mid, top-2), ser.Color) || same(at(mid, top+2), ser.Color) {
				t.Errorf("series %s, category %d: bar does not end at %v", ser.Label, cat, v)
			}
		}
	}
	if same(at(trX(0)-w-2, da.Min.Y+2), red) {
		t.Errorf("series a's bar in category 0 is wider than maxWidth %v", maxWidth)
	}
	if b := got.Bounds(); b != image.Rect(0, 0, 6*96, 3*96) {
		t.Errorf("image %v", b)
	}
}
