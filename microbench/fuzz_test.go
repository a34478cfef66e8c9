package microbench

import (
	"testing"
)

// FuzzValues feeds arbitrary bytes to every library's decoder (Case.Values) for every message
// kind: each must return values or an error, never panic or hang, and never a value or a
// count of values the input cannot hold. Seeds are real messages of
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
			if err != nil {
				continue
			}
			// Every value lies within the message, and each non-empty one
			// takes bytes of its own (an entry or an offset), so there are at
			// most as many as bytes. Their total may exceed the message: the
			// zero-copy formats let values share bytes (Cornflakes' reader
			// rule 2 bounds each value by the object only; FlatBuffers shares
			// strings), and their decoders alias the input rather than copy.
			nonEmpty := 0
			for _, v := range vals {
				if len(v) > len(msg) {
					t.Errorf("%s: a %d-byte value from a %d-byte message", tg.name, len(v), len(msg))
				}
				if len(v) > 0 {
					nonEmpty++
				}
			}
			if nonEmpty > len(msg) {
				t.Errorf("%s: %d values from a %d-byte message", tg.name, nonEmpty, len(msg))
			}
		}
	})
}
