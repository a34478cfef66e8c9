package wireimpl

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// viewInput writes into p (registered memory) a message whose only field is
// a bytes list numbered 1: the one-word header, n entries, then values of
// lengths around thr (empty ones too, and two entries sharing a value), and
// returns its length.
func viewInput(r *rand.Rand, p []byte, n, thr int) int {
	binary.LittleEndian.PutUint64(p, 1|uint64(1)<<32)
	binary.LittleEndian.PutUint64(p[8:], uint64(16)<<32|uint64(n))
	at := 16 + EntrySize*n
	for i := range n {
		var k int
		switch r.IntN(5) {
		case 0:
			k = 0
		case 1:
			k = 1 + r.IntN(max(thr-1, 1)) // below the threshold (when thr > 1)
		case 2:
			k = max(thr-1, 0)
		default:
			k = thr + r.IntN(300)
		}
		off := at
		if i > 0 && r.IntN(6) == 0 { // the previous value again
			off = int(binary.LittleEndian.Uint32(p[16+EntrySize*(i-1)+4:]))
			k = int(binary.LittleEndian.Uint32(p[16+EntrySize*(i-1):]))
		} else {
			for j := range k {
				p[at+j] = byte(r.Uint32())
			}
			at += k
		}
		binary.LittleEndian.PutUint64(p[16+EntrySize*i:], uint64(off)<<32|uint64(k))
	}
	return at
}

// TestMaterializeLikeRef holds materialize (one loop over the checked
// entries, with the kept totals) to source.ref of each element (the
// general code, which the segmented input still takes) and to sizeItems'
// totals, on random decoded lists in registered memory at several
// thresholds, and checks that it takes no more storage than the list has
// room for when it has some.
func TestMaterializeLikeRef(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	item, err := p.Alloc(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer item.Release()
	r := rand.New(rand.NewPCG(30, 21))
	for i := range 3000 {
		thr := []int{0, 1, 8, 64, 512}[r.IntN(5)]
		n := 1 + r.IntN(9)
		size := viewInput(r, item.Bytes(), n, thr)
		a := NewArena()
		a.Threshold = thr
		a.BorrowInput = true
		src, err := a.BeginDecode(item.Slice(0, size))
		if err != nil {
			t.Fatal(err)
		}
		var l BytesList
		if ok, err := src.DecodeOnly(1, 1, &l); !ok || err != nil || l.vep == 0 {
			t.Fatalf("case %d: not a checked view (%v, %v)", i, ok, err)
		}
		z := l.lz
		want := make([]Bytes, n)
		for j := range want {
			e := binary.LittleEndian.Uint64(item.Bytes()[int(z.off)+EntrySize*j:])
			want[j] = z.src.ref(uint32(e>>32), uint32(e))
		}
		l.materialize()
		if l.vep != 0 || l.lz != (lazy{}) || len(l.items) != n {
			t.Fatalf("case %d: not materialized", i)
		}
		for j := range want {
			g, w := l.items[j], want[j]
			if !bytes.Equal(g.data, w.data) || (g.data == nil) != (w.data == nil) || len(w.data) != 0 && &g.data[0] != &w.data[0] || g.buf != w.buf {
				t.Fatalf("case %d (thr %d): element %d is %v, ref made %v", i, thr, j, g, w)
			}
		}
		cp, zc, nz := sizeItems(want, 0, 0, 0)
		if !l.tok || l.tot != (listTotals{cp: cp, zc: zc, nz: uint32(nz)}) {
			t.Fatalf("case %d: totals %+v (kept %v), want %d, %d, %d", i, l.tot, l.tok, cp, zc, nz)
		}
		// A view in a list with room: materialized into it.
		var inl [InlineItems]Bytes
		k := BytesList{a: a, items: inl[:0:InlineItems], lz: z, vep: src.epoch + 1}
		k.materialize()
		if n <= InlineItems && &k.items[0] != &inl[0] || n > InlineItems && &k.items[0] == &inl[0] {
			t.Fatalf("case %d: %d elements, room for %d: own storage used %v", i, n, InlineItems, &k.items[0] == &inl[0])
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
}
