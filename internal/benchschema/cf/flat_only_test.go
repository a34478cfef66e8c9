package cf_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// ListBuffers has one field, a bytes list: its WireSerializeSGA is
// BytesList.SerializeOnly (runtime/wireimpl/fast_encode_only.go). These
// tests hold it to the unfused path for every kind of list it takes:
// empty, cleared, one copied value (the no-loop case, also empty and
// large), one zero-copy value, a mixed list (its kept totals), and decoded lists (walked) (empty, not yet loaded,
// already loaded as a view), each into a clean and a dirty SGA.
func TestSerializeOnlyMatchesUnfused(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 700))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	build := func(f func(l *wire.BytesList)) *cf.ListBuffers {
		m := cf.NewListBuffers(a)
		f(m.InitMessages(2))
		return m
	}
	msgs := map[string]*cf.ListBuffers{
		"new":           cf.NewListBuffers(a),
		"empty":         build(func(l *wire.BytesList) {}),
		"one copied":    build(func(l *wire.BytesList) { l.Append([]byte("value")) }),
		"one empty":     build(func(l *wire.BytesList) { l.Append(nil) }),
		"one large":     build(func(l *wire.BytesList) { l.Append(bytes.Repeat([]byte{3}, 5000)) }),
		"one zero-copy": build(func(l *wire.BytesList) { l.AppendBuf(zc) }),
		"cleared": build(func(l *wire.BytesList) {
			l.Append([]byte("gone"))
			l.Truncate(0)
		}),
		"mixed": build(func(l *wire.BytesList) {
			for i := 0; i < 9; i++ {
				if i%3 == 1 {
					l.AppendBuf(zc)
				} else {
					l.Append(bytes.Repeat([]byte{byte(i)}, i*7))
				}
			}
		}),
		// Every length of the word-wise short copies (1..32 bytes, each
		// byte distinct) and a few beyond, between zero-copy values.
		"short lengths": build(func(l *wire.BytesList) {
			for n := 0; n <= 40; n++ {
				v := make([]byte, n)
				for j := range v {
					v[j] = byte(n*37 + j + 1)
				}
				l.Append(v)
				if n%8 == 3 {
					l.AppendBuf(zc)
				}
			}
		}),
	}
	var sga wire.SGA
	for name, m := range msgs {
		checkFused(t, m, &wire.SGA{})
		checkFused(t, m, &sga) // dirty: the previous message's head and entries
		if t.Failed() {
			t.Fatalf("%s", name)
		}
	}

	// Decoded lists: from registered memory (large elements zero-copy
	// again), sent before and after the list is read.
	for _, vals := range [][]int{{}, {0}, {12}, {900}, {10, 900, 0, 2000, 33}} {
		src := cf.NewListBuffers(a)
		ml := src.InitMessages(len(vals))
		for i, n := range vals {
			ml.Append(bytes.Repeat([]byte{byte(i + 1)}, n))
		}
		in, err := wire.Flatten(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		rx := memtest.Alloc(t, pool, in)
		for _, read := range []bool{false, true} {
			b := wire.NewArena()
			b.Threshold = 512
			d, err := cf.DecodeListBuffers(b, rx)
			if err != nil {
				t.Fatal(err)
			}
			if read {
				l, err := d.GetMessages()
				if err != nil || l.Len() != len(vals) {
					t.Fatalf("%v: GetMessages %v, %d elements", vals, err, l.Len())
				}
			}
			var out wire.SGA
			checkFused(t, d, &out)
			checkFused(t, d, &sga)
			e := cf.NewListBuffers(a)
			if err := e.DecodeBytes(sga.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if !e.Equal(src) {
				t.Fatalf("%v read %v: sent again and decoded: %v, want %v", vals, read, e, src)
			}
			resetArena(t, b)
		}
		memtest.Release(t, rx)
	}
}

// TestSerializeOnlyAllocs: the one-element and the mixed list are written
// into a reused SGA without allocating.
func TestSerializeOnlyAllocs(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 700))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)
	one := cf.NewListBuffers(a)
	one.InitMessages(1).Append([]byte("value"))
	mixed := cf.NewListBuffers(a)
	ml := mixed.InitMessages(3)
	ml.Append([]byte("x"))
	ml.AppendBuf(zc)
	ml.Append([]byte("yz"))
	var sga wire.SGA
	for _, m := range []*cf.ListBuffers{one, mixed} {
		if err := m.SerializeSGA(&sga); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() {
			if err := m.SerializeSGA(&sga); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Fatalf("%d allocations per SerializeSGA", int(n))
		}
	}
}
