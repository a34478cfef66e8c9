package microbench

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/wire"
)

// TestCornflakesKeptReuse runs the hybrid mode's Serialize and Echo on the kept message 20,000
// times per shape (every variant in turn) and checks the contract of a reused built message
// (docs/CODEGEN.md, "Reusing a built message"): each output is byte-identical to a message
// built afresh from the same values (Serialize) and to the echoed input (Echo); the kept
// arena holds no reference and does not grow; the case's values and inputs keep their
// reference counts. The checked build verifies the borrowed values at every serialization.
func TestCornflakesKeptReuse(t *testing.T) {
	for _, name := range []string{"1x1024", "2x2048", "8x512", "google-1", "google-1-8", "tree5", "sweep-65536"} {
		t.Run(name, func(t *testing.T) {
			shape, err := ShapeByName(name)
			if err != nil {
				t.Fatal(err)
			}
			lc, err := Cornflakes().Prepare(shape, ModeHybrid)
			if err != nil {
				t.Fatal(err)
			}
			c := lc.(*cfCase)
			defer func() {
				if err := c.Close(); err != nil {
					t.Error(err)
				}
			}()
			if c.kept == nil {
				t.Fatal("the hybrid mode keeps no built message")
			}
			// What a fresh build of each variant serializes to.
			fresh := make([][]byte, len(c.vals))
			for v := range c.vals {
				a := wire.NewArena()
				a.Threshold = c.a.Threshold
				c2 := &cfCase{kind: c.kind, a: a}
				var sga wire.SGA
				if err := wire.SerializeSGA(c2.build(c.vals[v]), &sga); err != nil {
					t.Fatal(err)
				}
				fresh[v] = sga.AppendTo(nil)
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
			}
			var refs []int
			for _, b := range c.bufs {
				refs = append(refs, b.Refs())
			}
			grown := -1
			const n = 20000
			for i := range n {
				v := c.cyc.i
				if err := c.Serialize(); err != nil {
					t.Fatal(err)
				}
				if i < 2*len(c.vals) || i == n-1 {
					if got, _ := c.Output(); !bytes.Equal(got, fresh[v]) {
						t.Fatalf("op %d: the kept message serialized %d bytes, a fresh one %d, not the same bytes", i, len(got), len(fresh[v]))
					}
				}
				v = c.cyc.i
				if err := c.Echo(); err != nil {
					t.Fatal(err)
				}
				if i < 2*len(c.vals) || i == n-1 {
					if got, _ := c.Output(); !bytes.Equal(got, c.inBytes[v]) {
						t.Fatalf("op %d: echo wrote %d bytes, not the %d bytes of its input", i, len(got), len(c.inBytes[v]))
					}
				}
				if i == 2*len(c.vals) {
					grown = c.kept.a.Grown()
				}
			}
			if h := c.kept.a.Held(); h != 0 {
				t.Errorf("the kept arena holds %d references", h)
			}
			if g := c.kept.a.Grown(); g != grown {
				t.Errorf("the kept arena grew from %d to %d bytes", grown, g)
			}
			for i, b := range c.bufs {
				if b.Refs() != refs[i] {
					t.Errorf("buffer %d: %d references, %d before", i, b.Refs(), refs[i])
				}
			}
		})
	}
}
