package cf_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// echo2x2048 builds a ListBuffers of two registered 2048-byte values,
// serializes it, decodes it from a registered receive buffer, and builds
// and serializes the response from the decoded fields (the papers' echo).
type echo2x2048 struct {
	pool      *mem.Pool
	vals      [2]mem.Buf
	rx        mem.Buf
	req, resp wire.SGA
	a         *wire.Arena
}

func newEcho(t testing.TB) *echo2x2048 {
	e := &echo2x2048{pool: memtest.NewPool(t), a: wire.NewArena()}
	for i := range e.vals {
		e.vals[i] = memtest.Alloc(t, e.pool, bytes.Repeat([]byte{byte('a' + i)}, 2048))
	}
	var err error
	if e.rx, err = e.pool.Alloc(8192); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, v := range e.vals {
			memtest.Release(t, v)
		}
		memtest.Release(t, e.rx)
	})
	return e
}

func (e *echo2x2048) run(t testing.TB) {
	x := cf.NewListBuffers(e.a)
	l := x.InitMessages(2)
	for _, v := range e.vals {
		l.Append(v.Bytes())
	}
	if err := wire.SerializeSGA(x, &e.req); err != nil {
		t.Fatal(err)
	}
	n := len(e.req.AppendTo(e.rx.Bytes()[:0]))
	y := cf.NewListBuffers(e.a)
	if err := y.Decode(e.rx.Slice(0, n)); err != nil {
		t.Fatal(err)
	}
	in, err := y.GetMessages()
	if err != nil || in.Len() != 2 {
		t.Fatal("decode", err)
	}
	r := cf.NewListBuffers(e.a)
	out := r.InitMessages(in.Len())
	for i := range in.Len() {
		out.Append(in.At(i))
	}
	if err := wire.SerializeSGA(r, &e.resp); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Reset(); err != nil {
		t.Fatal(err)
	}
}

// TestEchoZeroCopyAndAllocs checks that the echo of 2x2048 sends both
// values zero-copy (from the registered receive buffer), allocates nothing,
// and leaves only the test's own references in the pool.
func TestEchoZeroCopyAndAllocs(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	e := newEcho(t)
	e.run(t)
	if len(e.resp.Entries) != 2 || len(e.req.Entries) != 2 {
		t.Errorf("zero-copy entries: request %d, response %d; want 2 and 2", len(e.req.Entries), len(e.resp.Entries))
	}
	if n := testing.AllocsPerRun(100, func() { e.run(t) }); n != 0 {
		t.Errorf("echo allocates %v times per op, want 0", n)
	}
	memtest.AssertInUse(t, e.pool, 3) // the two values and the receive buffer
}

// TestTree5RoundTrip builds the tree5 shape (32 leaves) and round-trips it.
func TestTree5RoundTrip(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	leaf := bytes.Repeat([]byte("l"), 128)
	x := cf.NewTree5(a)
	for _, t4 := range []*cf.Tree4{x.InitLeft(), x.InitRight()} {
		for _, t3 := range []*cf.Tree3{t4.InitLeft(), t4.InitRight()} {
			for _, t2 := range []*cf.Tree2{t3.InitLeft(), t3.InitRight()} {
				for _, t1 := range []*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
					t1.InitLeft().SetMessage(leaf)
					t1.InitRight().SetMessage(leaf)
				}
			}
		}
	}
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := cf.NewTree5(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) {
		t.Fatal("tree5 differs after the round trip")
	}
	if sz := x.Sizes(); sz.Copied != 32*128 {
		t.Errorf("Sizes = %+v, want 32 copied leaves of 128 bytes", sz)
	}
}

func BenchmarkEcho2x2048(b *testing.B) {
	e := newEcho(b)
	b.ReportAllocs()
	for b.Loop() {
		e.run(b)
	}
}
