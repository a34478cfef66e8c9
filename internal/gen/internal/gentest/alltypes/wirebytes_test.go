package alltypes_test

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

var updateWire = flag.Bool("update-wire", false, "rewrite testdata/wirebytes.golden (only when the wire format is meant to change)")

// TestWireBytesGolden pins the bytes the generated code writes: for 150
// random messages of every alltypes shape (thresholds 0, 512 and CopyAll,
// values partly in registered memory) it records the SHA-256 of the
// flattened message, its Sizes, and the SHA-256 of the message re-serialized
// after decoding it from registered memory. The golden file was written by
// the per-field generated code that preceded the fast path (docs/CODEGEN.md):
// the fast path must reproduce it byte for byte.
func TestWireBytesGolden(t *testing.T) {
	pool := memtest.NewPool(t)
	r := rand.New(rand.NewPCG(7, 11))
	var out bytes.Buffer
	for iter := range 150 {
		a := wire.NewArena()
		a.Threshold = []int{0, 512, wire.CopyAll}[iter%3]
		g := &gen{r: r, a: a, pool: pool, t: t}
		cases := []struct {
			x     msg
			fresh func() msg
		}{
			{g.scalars(), func() msg { return alltypes.NewScalars(a) }},
			{g.optionals(), func() msg { return alltypes.NewOptionals(a) }},
			{g.lists(), func() msg { return alltypes.NewLists(a) }},
			{g.outer(), func() msg { return alltypes.NewOuter(a) }},
		}
		for i, c := range cases {
			flat, err := wire.Flatten(c.x, nil)
			if err != nil {
				t.Fatalf("iter %d case %d: Flatten: %v", iter, i, err)
			}
			sz := c.x.Sizes()
			var sga wire.SGA
			if err := wire.SerializeSGA(c.x, &sga); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sga.AppendTo(nil), flat) {
				t.Fatalf("iter %d case %d: SGA and Flatten differ", iter, i)
			}
			rx := memtest.Alloc(t, pool, flat)
			z := c.fresh()
			err = z.Decode(rx)
			memtest.Release(t, rx)
			if err != nil {
				t.Fatalf("iter %d case %d: decode: %v", iter, i, err)
			}
			again, err := wire.Flatten(z, nil)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "%d %d %x %+v %x\n", iter, i, sha256.Sum256(flat), sz, sha256.Sum256(again))
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		for _, b := range g.held {
			memtest.Release(t, b)
		}
	}
	path := filepath.Join("testdata", "wirebytes.golden")
	if *updateWire {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		got := bytes.Split(out.Bytes(), []byte("\n"))
		w := bytes.Split(want, []byte("\n"))
		for i := range min(len(got), len(w)) {
			if !bytes.Equal(got[i], w[i]) {
				t.Fatalf("wire bytes differ from %s at line %d:\n got %s\nwant %s", path, i+1, got[i], w[i])
			}
		}
		t.Fatalf("wire bytes differ from %s (%d lines, want %d)", path, len(got), len(w))
	}
}
