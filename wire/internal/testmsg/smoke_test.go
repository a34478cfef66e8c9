package testmsg

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

type nopSink struct{ n int }

func (s *nopSink) ZeroCopyEntry(b mem.Buf) error { s.n++; return nil }

func TestSmoke(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	v1 := memtest.Alloc(t, pool, bytes.Repeat([]byte{'a'}, 2048))
	v2 := memtest.Alloc(t, pool, bytes.Repeat([]byte{'b'}, 100))
	m := NewAllTypes(a)
	m.SetI32(-5)
	m.SetData(v1.Bytes())
	m.SetName("hello")
	l := m.InitBlobs(2)
	l.Append(v1.Bytes())
	l.Append(v2.Bytes())
	c := m.InitChild()
	c.SetId(7)
	m.SetFar([]byte("far"))
	m.SetOptI32(0)
	flat, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	sz := m.Sizes()
	t.Logf("sizes %+v len %d", sz, len(flat))
	out := NewAllTypes(a)
	if err := out.DecodeBytes(flat); err != nil {
		t.Fatal(err)
	}
	if !out.Equal(m) {
		t.Fatalf("not equal:\n%v\n%v", out, m)
	}
	t.Log(out.String())
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, v1)
	memtest.Release(t, v2)
}

func BenchmarkEcho2x2048(b *testing.B) {
	pool := memtest.NewPool(b)
	a := wire.NewArena()
	v1 := memtest.Alloc(b, pool, bytes.Repeat([]byte{'a'}, 2048))
	v2 := memtest.Alloc(b, pool, bytes.Repeat([]byte{'b'}, 2048))
	m := NewBufs(a)
	l := m.InitMessages(2)
	l.Append(v1.Bytes())
	l.Append(v2.Bytes())
	flat, _ := wire.Flatten(m, nil)
	in, _ := pool.AllocCopy(flat)
	a.Reset()
	dst := make([]byte, 4096)
	sink := &nopSink{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := NewBufs(a)
		if err := req.Decode(in); err != nil {
			b.Fatal(err)
		}
		vals, err := req.GetMessages()
		if err != nil {
			b.Fatal(err)
		}
		resp := NewBufs(a)
		out := resp.InitMessages(vals.Len())
		for i := range vals.Len() {
			out.Append(vals.At(i))
		}
		sz := resp.Sizes()
		if err := resp.Serialize(dst[:sz.Head()], sink); err != nil {
			b.Fatal(err)
		}
		a.Reset()
	}
	b.StopTimer()
	in.Release()
	v1.Release()
	v2.Release()
}
