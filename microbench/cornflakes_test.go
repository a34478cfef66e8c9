package microbench

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
)

// TestCornflakesModes checks that each mode sends the values it should zero-copy: values of at
// least 512 B in hybrid, none in copy, all in zerocopy, both when serializing built messages
// and when echoing decoded ones.
func TestCornflakesModes(t *testing.T) {
	tests := []struct {
		shape, mode string
		entries     int
	}{
		{"2x2048", ModeHybrid, 2},
		{"2x2048", ModeCopy, 0},
		{"2x2048", ModeZeroCopy, 2},
		{"8x512", ModeHybrid, 8},
		{"8x512", ModeCopy, 0},
		{"sweep-256", ModeHybrid, 0},
		{"sweep-256", ModeZeroCopy, 1},
		{"sweep-65536", ModeHybrid, 1},
		{"tree5", ModeHybrid, 0},
		{"tree5", ModeZeroCopy, TreeLeaves},
	}
	for _, tt := range tests {
		t.Run(tt.shape+"/"+tt.mode, func(t *testing.T) {
			shape, err := ShapeByName(tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Cornflakes().Prepare(shape, tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			cc := c.(*cfCase)
			for _, op := range []Op{OpSerialize, OpEcho} {
				if err := op.Run(c); err != nil {
					t.Fatal(err)
				}
				if got := len(cc.sga.Entries); got != tt.entries {
					t.Errorf("%s: %d zero-copy entries, want %d", op, got, tt.entries)
				}
				want := 0
				for _, n := range shape.Variants[0] {
					want += n
				}
				if got := cc.sga.Len(); got <= want {
					t.Errorf("%s: serialized %d bytes for %d bytes of values", op, got, want)
				}
			}
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if cc.pool != nil {
				t.Error("Close left the pool open")
			}
		})
	}
}

// TestCornflakesDoesNotAllocate: every op of every mode allocates nothing from the Go heap
// once warm (the arena reuses its chunks and slabs; the SGA its head and entries).
func TestCornflakesDoesNotAllocate(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	for _, name := range []string{"1x1024", "2x2048", "google-1-16", "tree5", "sweep-65536"} {
		shape, err := ShapeByName(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range Cornflakes().Modes() {
			c, err := Cornflakes().Prepare(shape, mode)
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range Ops() {
				for i := 0; i < 2*len(shape.Variants); i++ { // warm every variant
					if err := op.Run(c); err != nil {
						t.Fatal(err)
					}
				}
				var rerr error
				allocs := testing.AllocsPerRun(100, func() {
					if err := op.Run(c); err != nil {
						rerr = err
					}
				})
				if rerr != nil {
					t.Fatal(rerr)
				}
				if allocs != 0 {
					t.Errorf("%s %s %s: %v allocs per op, want 0", name, mode, op, allocs)
				}
			}
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestCornflakesCloseReportsLeaks: a reference taken on a case's registered memory and not
// released makes Close fail instead of silently unmapping memory still in use.
func TestCornflakesCloseReportsLeaks(t *testing.T) {
	shape, _ := ShapeByName("1x1024")
	c, err := Cornflakes().Prepare(shape, ModeHybrid)
	if err != nil {
		t.Fatal(err)
	}
	cc := c.(*cfCase)
	pool := cc.pool
	leaked := cc.inputs[0].Clone()
	if err := c.Close(); err == nil {
		t.Fatal("Close succeeded with a leaked reference")
	}
	if err := leaked.Release(); err != nil {
		t.Fatal(err)
	}
	if n := pool.InUse(); n != 0 {
		t.Fatalf("InUse = %d after releasing the leak", n)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCornflakesBadMode(t *testing.T) {
	shape, _ := ShapeByName("1x64")
	if _, err := Cornflakes().Prepare(shape, "fast"); err == nil {
		t.Fatal("Prepare accepted mode fast")
	}
}

// TestCornflakesEchoSharesInput: Echo passes decoded zero-copy values on by sharing the
// decoded input's reference, which the arena borrows from the case (Arena.BorrowInput: the
// arena holds no reference at all, and the zero-copy entries are windows of the input), not by
// cloning each value.
func TestCornflakesEchoSharesInput(t *testing.T) {
	for _, mode := range []string{ModeHybrid, ModeZeroCopy} {
		shape, _ := ShapeByName("2x2048")
		c, err := Cornflakes().Prepare(shape, mode)
		if err != nil {
			t.Fatal(err)
		}
		cc := c.(*cfCase)
		if err := c.Echo(); err != nil {
			t.Fatal(err)
		}
		if n := cc.a.Held(); n != 0 {
			t.Errorf("%s: arena holds %d references after Echo, want 0 (the input is borrowed)", mode, n)
		}
		if n := cc.inputs[0].Refs(); n != 1 {
			t.Errorf("%s: the input has %d references after Echo, want 1 (the case's)", mode, n)
		}
		in := cc.inputs[0].Bytes()
		for i, e := range cc.sga.Entries {
			p := e.Bytes()
			if len(p) == 0 || &p[0] != &in[len(in)-len(p)*(len(cc.sga.Entries)-i)] {
				t.Errorf("%s: entry %d is not a window of the decoded input", mode, i)
			}
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
