package wireimpl

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestPutFlat holds the flat path's one-walk list writer to
// DirectWriter.PutBytesList (the same header, values and SGA entries for
// lists of copied, zero-copy and mixed elements), and checks that it
// writes no SGA entry and reports false when a region does not fit or the
// SGA has no room reserved (what a data race between the sizes and the
// write could make).
func TestPutFlat(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	big := item.Slice(0, 1500)
	a := NewArena()
	defer a.Reset()
	small := []byte("small value")
	lists := map[string][]any{
		"copied":    {small, []byte("x"), bytes.Repeat([]byte{3}, 40)},
		"zero-copy": {big, item.Slice(2000, 1100)},
		"mixed":     {small, big, []byte{}, item.Slice(2000, 1100), []byte("tail")},
		"one":       {big},
	}
	for name, vals := range lists {
		var l BytesList
		l.Init(a, len(vals))
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				l.Append(v)
			case mem.Buf:
				l.AppendBuf(v)
			}
		}
		hdr, cpn, zcn, ents, _ := l.SizeFlat(a, 16, 0, 0, 0) // a bitmap word and the list's entry first
		head := hdr + cpn

		want := SGA{Head: make([]byte, head), Entries: make([]mem.Buf, 0, ents)}
		var dw DirectWriter
		dw.BindFlat(want.Head, hdr, &want)
		wlh, wcp, wzc := dw.PutBytesList(8, 16, hdr, head, &l)
		if dw.Failed() {
			t.Fatalf("%s: PutBytesList failed", name)
		}

		got := SGA{Head: make([]byte, head), Entries: make([]mem.Buf, 0, ents)}
		lh, cp, zc, ok := l.PutFlat(got.Head, 8, 16, hdr, hdr, head, &got)
		if !ok || lh != wlh || cp != wcp || zc != wzc {
			t.Fatalf("%s: PutFlat = %d, %d, %d, %v; want %d, %d, %d", name, lh, cp, zc, ok, wlh, wcp, wzc)
		}
		if lh != hdr || cp != head || zc != head+zcn || len(got.Entries) != ents {
			t.Fatalf("%s: cursors %d, %d, %d (%d entries) against the sizes %d, %d, %d (%d)", name, lh, cp, zc, len(got.Entries), hdr, head, head+zcn, ents)
		}
		if !bytes.Equal(got.Head, want.Head) || !slices.Equal(got.Entries, want.Entries) {
			t.Fatalf("%s: head %x entries %v; want %x %v", name, got.Head, got.Entries, want.Head, want.Entries)
		}

		for _, tc := range []struct {
			name                string
			dst, ents           int
			at, lh, hdr, cp, zc int
		}{
			{"list entry in the element entries", head, ents, 16, 16, hdr, hdr, head},
			{"negative list entry", head, ents, -8, 16, hdr, hdr, head},
			{"element entries past the header region", head, ents, 8, 24, hdr, hdr, head},
			{"header region past the values", head, ents, 8, 16, hdr, hdr - 8, head},
			{"values past the head", head - 1, ents, 8, 16, hdr, hdr, head},
			{"no room for the SGA entries", head, ents - 1, 8, 16, hdr, hdr, head},
		} {
			if tc.ents < 0 || (tc.name == "values past the head" && cpn == 0) {
				continue // the case cannot arise for this list
			}
			sga := SGA{Head: make([]byte, tc.dst), Entries: make([]mem.Buf, 0, tc.ents)}
			if _, _, _, ok := l.PutFlat(sga.Head, tc.at, tc.lh, tc.hdr, tc.cp, tc.zc, &sga); ok || len(sga.Entries) != 0 {
				t.Fatalf("%s: %s: PutFlat = %v with %d SGA entries; want false and none", name, tc.name, ok, len(sga.Entries))
			}
		}
	}
}

// TestPutFlatStrings holds StringList.PutFlat to DirectWriter.PutStringList
// for a mixed list, and checks its refusal of a region that does not fit.
func TestPutFlatStrings(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	a := NewArena()
	defer a.Reset()
	var l StringList
	l.Init(a, 4)
	l.Append("small")
	l.AppendBuf(item.Slice(0, 1500))
	l.AppendBytes([]byte("bytes"))
	l.AppendBuf(item.Slice(2000, 1100))
	hdr, cpn, zcn, ents, _ := l.SizeFlat(a, 16, 0, 0, 0)
	head := hdr + cpn
	if ents != 2 || zcn != 2600 {
		t.Fatalf("sizes: %d zero-copy bytes in %d entries; want 2600 in 2", zcn, ents)
	}

	want := SGA{Head: make([]byte, head), Entries: make([]mem.Buf, 0, ents)}
	var dw DirectWriter
	dw.BindFlat(want.Head, hdr, &want)
	wlh, wcp, wzc := dw.PutStringList(8, 16, hdr, head, &l)
	got := SGA{Head: make([]byte, head), Entries: make([]mem.Buf, 0, ents)}
	lh, cp, zc, ok := l.PutFlat(got.Head, 8, 16, hdr, hdr, head, &got)
	if dw.Failed() || !ok || lh != wlh || cp != wcp || zc != wzc {
		t.Fatalf("PutFlat = %d, %d, %d, %v; want %d, %d, %d", lh, cp, zc, ok, wlh, wcp, wzc)
	}
	if !bytes.Equal(got.Head, want.Head) || !slices.Equal(got.Entries, want.Entries) {
		t.Fatalf("head %x entries %v; want %x %v", got.Head, got.Entries, want.Head, want.Entries)
	}
	for name, sga := range map[string]SGA{
		"values past the head":        {Head: make([]byte, head-1), Entries: make([]mem.Buf, 0, ents)},
		"no room for the SGA entries": {Head: make([]byte, head), Entries: make([]mem.Buf, 0, ents-1)},
	} {
		if _, _, _, ok := l.PutFlat(sga.Head, 8, 16, hdr, hdr, head, &sga); ok || len(sga.Entries) != 0 {
			t.Fatalf("%s: PutFlat = %v with %d SGA entries; want false and none", name, ok, len(sga.Entries))
		}
	}
}
