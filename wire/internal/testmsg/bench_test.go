package testmsg

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

type countSink struct{ n int }

func (s *countSink) ZeroCopyEntry(mem.Buf) error { s.n++; return nil }

// echoSetup returns a registered 2x2048 request (Bufs with two 2048-byte values).
func echoSetup(t testing.TB, a *wire.Arena, pool *mem.Pool, n, size int) mem.Buf {
	req := NewBufs(a)
	l := req.InitMessages(n)
	var vals []mem.Buf
	for i := range n {
		v := memtest.Alloc(t, pool, bytes.Repeat([]byte{byte('a' + i)}, size))
		vals = append(vals, v)
		l.Append(v.Bytes())
	}
	flat, err := wire.Flatten(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := memtest.Alloc(t, pool, flat)
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		memtest.Release(t, v)
	}
	return in
}

// echo is the papers' echo server step: decode the request, build a
// response from the decoded fields, serialize it (head into dst, zero-copy
// entries to sink).
func echo(a *wire.Arena, in mem.Buf, dst []byte, sink wire.EntrySink) error {
	req := NewBufs(a)
	if err := req.Decode(in); err != nil {
		return err
	}
	vals, err := req.GetMessages()
	if err != nil {
		return err
	}
	resp := NewBufs(a)
	out := resp.InitMessages(vals.Len())
	for i := range vals.Len() {
		out.Append(vals.At(i))
	}
	sz := resp.Sizes()
	if err := resp.Serialize(dst[:sz.Head()], sink); err != nil {
		return err
	}
	return a.Reset()
}

// TestEchoZeroAlloc checks the echo fast path allocates nothing and sends
// the values zero-copy.
func TestEchoZeroAlloc(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	pool := memtest.NewPool(t)
	a := newArena(t, wire.DefaultThreshold)
	in := echoSetup(t, a, pool, 2, 2048)
	defer memtest.Release(t, in)
	dst := make([]byte, 256)
	sink := &countSink{}
	if err := echo(a, in, dst, sink); err != nil || sink.n != 2 {
		t.Fatalf("echo: %v, %d zero-copy entries", err, sink.n)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := echo(a, in, dst, sink); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("echo allocates %v times per op", allocs)
	}
	if in.Refs() != 1 {
		t.Errorf("input refs = %d after echo, want 1", in.Refs())
	}
}

func BenchmarkEcho2x2048(b *testing.B) {
	pool := memtest.NewPool(b)
	a := wire.NewArena()
	in := echoSetup(b, a, pool, 2, 2048)
	dst := make([]byte, 256)
	sink := &countSink{}
	b.ReportAllocs()
	b.SetBytes(2 * 2048)
	for b.Loop() {
		if err := echo(a, in, dst, sink); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	memtest.Release(b, in)
}

// BenchmarkBuildSerialize2x2048: build a 2x2048 message from registered
// values and serialize it (Sizes + Serialize into a reused head).
func BenchmarkBuildSerialize2x2048(b *testing.B) {
	pool := memtest.NewPool(b)
	a := wire.NewArena()
	v1 := memtest.Alloc(b, pool, make([]byte, 2048))
	v2 := memtest.Alloc(b, pool, make([]byte, 2048))
	dst := make([]byte, 256)
	sink := &countSink{}
	b.ReportAllocs()
	for b.Loop() {
		m := NewBufs(a)
		l := m.InitMessages(2)
		l.Append(v1.Bytes())
		l.Append(v2.Bytes())
		sz := m.Sizes()
		if err := m.Serialize(dst[:sz.Head()], sink); err != nil {
			b.Fatal(err)
		}
		_ = a.Reset()
	}
	b.StopTimer()
	memtest.Release(b, v1)
	memtest.Release(b, v2)
}

// BenchmarkDecodeAllTypes: decode the golden AllTypes and read every field.
func BenchmarkDecodeAllTypes(b *testing.B) {
	v := newValues(b)
	a := wire.NewArena()
	flat, err := wire.Flatten(goldenAll(v, a), nil)
	if err != nil {
		b.Fatal(err)
	}
	_ = a.Reset()
	b.ReportAllocs()
	b.SetBytes(int64(len(flat)))
	for b.Loop() {
		m := NewAllTypes(a)
		if err := m.DecodeBytes(flat); err != nil {
			b.Fatal(err)
		}
		if err := walk(m); err != nil {
			b.Fatal(err)
		}
		_ = a.Reset()
	}
}

// TestSetFromDecodedInput: values set from a decoded registered input share
// it: a large one is a zero-copy window of the input's reference, a small
// one aliases the input (no arena copy) and is copied into the head at
// Serialize; no reference is taken besides the decode's own.
func TestSetFromDecodedInput(t *testing.T) {
	pool := memtest.NewPool(t)
	a := newArena(t, wire.DefaultThreshold)
	req := NewBufs(a)
	l := req.InitMessages(2)
	l.Append(bytes.Repeat([]byte{'s'}, 100))
	l.Append(bytes.Repeat([]byte{'L'}, 2048))
	flat, err := wire.Flatten(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	in := memtest.Alloc(t, pool, flat)
	defer memtest.Release(t, in)

	got := NewBufs(a)
	if err := got.Decode(in); err != nil {
		t.Fatal(err)
	}
	vals, err := got.GetMessages()
	if err != nil {
		t.Fatal(err)
	}
	grown := a.Grown()
	resp := NewBufs(a)
	out := resp.InitMessages(vals.Len())
	for i := range vals.Len() {
		out.Append(vals.At(i))
	}
	if a.Held() != 1 {
		t.Errorf("arena holds %d references, want 1 (the input)", a.Held())
	}
	p := in.Bytes()
	for i := range out.Len() {
		if v := out.At(i); &v[0] != &vals.At(i)[0] {
			t.Errorf("value %d was copied, want it to alias the decoded input", i)
		}
		if zc, n := out.IsZeroCopy(i), len(out.At(i)); zc != (n >= wire.DefaultThreshold) {
			t.Errorf("value %d (%d bytes): zero-copy %v", i, n, zc)
		}
	}
	if sz := resp.Sizes(); sz.Entries != 1 || sz.Copied != 100 || sz.ZeroCopy != 2048 {
		t.Errorf("Sizes = %+v, want 100 copied and one 2048-byte entry", sz)
	}
	if a.Grown() != grown {
		t.Errorf("arena grew by %d bytes while building from decoded values", a.Grown()-grown)
	}
	echoed, err := wire.Flatten(resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(echoed, p) {
		t.Error("echoed message differs from the input")
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if in.Refs() != 1 {
		t.Errorf("input refs = %d after Reset, want 1", in.Refs())
	}
}
