package microbench

import (
	"testing"
)

// FuzzValues feeds arbitrary bytes to every library's decoder (Case.Values) for every message
// kind: each must return values or an error, never panic or hang. Seeds are real messages of
// each library (plus the committed corpus in testdata/fuzz/FuzzValues).
func FuzzValues(f *testing.F) {
	type target struct {
		name string
		c    Case
	}
	var targets []target
	for _, shapeName := range []string{"3x7", "1x64", "tree5"} {
		shape, err := ShapeByName(shapeName)
		if err != nil {
			f.Fatal(err)
		}
		for _, lib := range Libraries() {
			mode := lib.Modes()[0]
			c, err := lib.Prepare(shape, mode)
			if err != nil {
				f.Fatal(err)
			}
			if err := c.Serialize(); err != nil {
				f.Fatal(err)
			}
			out, err := c.Output()
			if err != nil {
				f.Fatal(err)
			}
			if shapeName != "tree5" {
				f.Add(out) // trees are large seeds; the small shapes cover the formats
			}
			targets = append(targets, target{lib.Name() + " " + shapeName, c})
		}
	}
	f.Cleanup(func() {
		for _, t := range targets {
			if err := t.c.Close(); err != nil {
				f.Error(err)
			}
		}
	})
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, tg := range targets {
			vals, err := tg.c.Values(msg)
			if err == nil {
				total := 0
				for _, v := range vals {
					total += len(v)
				}
				if total > len(msg) {
					t.Errorf("%s: %d bytes of values from a %d-byte message", tg.name, total, len(msg))
				}
			}
		}
	})
}
