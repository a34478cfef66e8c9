package wireimpl

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// sgaOf serializes l (the only field, number 1) with SerializeOnlyOr and
// returns the head and the entries.
func sgaOf(t *testing.T, a *Arena, l *BytesList) ([]byte, []mem.Buf) {
	t.Helper()
	c := Core{a: a, epoch: uint32(a.epoch)}
	var sga SGA
	if err := l.SerializeOnlyOr(&c, 1, &sga, notFlat{}); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(sga.Head), slices.Clone(sga.Entries)
}

// TestShareViewLikeBorrow holds AppendBorrowedFrom's O(1) case (l becomes
// the decoded view: shareView) and the flat serializer's view path
// (serializeOnlyView) to the element loop of borrowFrom followed by the
// items path, on random decoded lists in registered memory at several
// thresholds: the same head bytes and SGA entries, and, once materialized,
// the same elements and kept totals. The decoded list is not changed.
func TestShareViewLikeBorrow(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	r := rand.New(rand.NewPCG(30, 22))
	shared := 0
	for i := range 3000 {
		thr := []int{0, 1, 8, 64, 512}[r.IntN(5)]
		n := 1 + r.IntN(InlineItems)
		size := viewInput(r, item.Bytes(), n, thr)
		in := item.Slice(0, size)
		a := NewArena()
		a.Threshold = thr
		a.BorrowInput = true
		src, err := a.BeginDecode(in)
		if err != nil {
			t.Fatal(err)
		}
		var req BytesList
		if ok, err := src.DecodeOnly(1, 1, &req); !ok || err != nil || req.vep == 0 {
			t.Fatalf("case %d: not a checked view (%v, %v)", i, ok, err)
		}
		before := req.AppendValues(nil)

		var inl [InlineItems]Bytes
		var l BytesList
		l.InitIn(a, n, &inl)
		if err := l.AppendBorrowedFrom(&req); err != nil {
			t.Fatal(err)
		}
		if l.vep != 0 {
			shared++
		} else if !mem.Checked {
			t.Fatalf("case %d: AppendBorrowedFrom did not share the view", i)
		}
		var m BytesList // the element loop
		m.Init(a, n)
		if err := m.borrowFrom(&req, false); err != nil {
			t.Fatal(err)
		}
		if m.vep != 0 || len(m.items) != n {
			t.Fatalf("case %d: borrowFrom left a view", i)
		}
		gh, ge := sgaOf(t, a, &l)
		wh, we := sgaOf(t, a, &m)
		if !bytes.Equal(gh, wh) || !slices.Equal(ge, we) {
			t.Fatalf("case %d (thr %d, % x): view path head % x entries %v; items path % x %v", i, thr, item.Bytes()[:size], gh, ge, wh, we)
		}
		l.materialize()
		if !slices.EqualFunc(l.items, m.items, sameBytes) || l.tot != m.tot || !l.tok || !m.tok {
			t.Fatalf("case %d: materialized %v %+v %v; borrowed %v %+v %v", i, l.items, l.tot, l.tok, m.items, m.tot, m.tok)
		}
		if len(l.items) != 0 && &l.items[0] != &inl[0] {
			t.Fatalf("case %d: materialize did not use the list's own storage", i)
		}
		if req.vep == 0 || !slices.EqualFunc(req.AppendValues(nil), before, bytes.Equal) {
			t.Fatalf("case %d: the decoded list changed", i)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	if !mem.Checked && shared != 3000 {
		t.Fatalf("%d of 3000 shared", shared)
	}
}

// TestShareViewCopyOnWrite: after AppendBorrowedFrom shared a decoded view,
// each writer of either list leaves the other as it was; the O(1) case is
// not taken for a list of another arena, one without room, or a view
// decoded at another threshold (borrowFrom's loop then decides each
// element).
func TestShareViewCopyOnWrite(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build takes the element loop (it records each borrowed value)")
	}
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	r := rand.New(rand.NewPCG(30, 23))
	size := viewInput(r, item.Bytes(), 3, 8)
	in := item.Slice(0, size)
	decode := func(a *Arena) *BytesList {
		src, err := a.BeginDecode(in)
		if err != nil {
			t.Fatal(err)
		}
		var req BytesList
		if ok, err := src.DecodeOnly(1, 1, &req); !ok || err != nil || req.vep == 0 {
			t.Fatalf("not a checked view (%v, %v)", ok, err)
		}
		return &req
	}
	a := NewArena()
	a.Threshold = 8
	a.BorrowInput = true
	defer a.Reset()
	req := decode(a)
	want := req.AppendValues(nil)
	same := func(what string, l *BytesList, vals [][]byte) {
		t.Helper()
		if !slices.EqualFunc(l.AppendValues(nil), vals, bytes.Equal) {
			t.Fatalf("%s: %q, want %q", what, l.AppendValues(nil), vals)
		}
	}
	writes := map[string]func(l *BytesList){
		"Append":      func(l *BytesList) { l.Append([]byte("new")) },
		"Field.Set":   func(l *BytesList) { l.Field(0).Set(a, []byte("set")) },
		"Truncate":    func(l *BytesList) { l.Truncate(1); l.Append([]byte("after")) },
		"Truncate(0)": func(l *BytesList) { l.Truncate(0); l.Append([]byte("after")) },
		"SetBorrowedAll": func(l *BytesList) {
			l.SetBorrowedAll([][]byte{[]byte("x"), []byte("y")})
		},
	}
	for name, write := range writes {
		var inl [InlineItems]Bytes
		var l BytesList
		l.InitIn(a, 0, &inl)
		if err := l.AppendBorrowedFrom(req); err != nil || l.vep == 0 {
			t.Fatalf("%s: not shared (%v)", name, err)
		}
		write(&l)
		same(name+": the decoded list", req, want)
		// And the other way: a decoded list written, one sharing it kept.
		req2 := decode(a) // the same input again (the arena's second decode)
		var inl2 [InlineItems]Bytes
		var k BytesList
		k.InitIn(a, 0, &inl2)
		if err := k.AppendBorrowedFrom(req2); err != nil || k.vep == 0 {
			t.Fatalf("%s: not shared (%v)", name, err)
		}
		write(req2)
		same(name+": the list sharing it", &k, want)
	}

	// Not shared: another arena, no room, another threshold.
	b := NewArena()
	b.Threshold = 8
	var l BytesList
	l.Init(b, 4)
	if err := l.AppendBorrowedFrom(req); err != nil || l.vep != 0 {
		t.Fatalf("another arena: %v, view %v", err, l.vep != 0)
	}
	same("another arena", &l, want)
	l = BytesList{}
	l.Init(a, 0)
	if err := l.AppendBorrowedFrom(req); err != nil || l.vep != 0 {
		t.Fatalf("no room: %v, view %v", err, l.vep != 0)
	}
	same("no room", &l, want)
	a.Threshold = 9
	l = BytesList{}
	l.Init(a, 4)
	if err := l.AppendBorrowedFrom(req); err != nil || l.vep != 0 {
		t.Fatalf("another threshold: %v, view %v", err, l.vep != 0)
	}
	same("another threshold", &l, want)
}

// sameBytes reports whether x and y are the same element: the same
// slice (address, length and capacity) and the same window.
func sameBytes(x, y Bytes) bool {
	return unsafe.SliceData(x.data) == unsafe.SliceData(y.data) && len(x.data) == len(y.data) &&
		cap(x.data) == cap(y.data) && x.buf == y.buf
}
