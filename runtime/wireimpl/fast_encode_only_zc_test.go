package wireimpl

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestSerializeOnlyZeroCopyModified: SerializeOnlyOr's loop for a list of
// zero-copy values reports ErrModified, and writes no stale entry, when
// the list's kept totals disagree with its values (what a data race on
// the list between the totals and the write would leave): a value copied
// after all, a length other than the totals', one value more than the
// totals count. The list as built serializes with one entry per value.
func TestSerializeOnlyZeroCopyModified(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	b := memtest.Alloc(t, p, bytes.Repeat([]byte{7}, 4096))
	defer memtest.Release(t, b)
	a := NewArena()
	a.Threshold = 0
	defer a.Reset()
	var c Core
	c.Init(a)
	build := func() *BytesList {
		var l BytesList
		l.Init(a, 3)
		l.AppendBuf(b.Slice(0, 1000))
		l.AppendBuf(b.Slice(1000, 1000))
		l.AppendBuf(b.Slice(3000, 96))
		return &l
	}
	var u unfusedRecorder
	var sga SGA
	l := build()
	if err := l.SerializeOnlyOr(&c, 1, &sga, &u); err != nil || u.called != 0 {
		t.Fatalf("SerializeOnlyOr = %v (unfused called %d times)", err, u.called)
	}
	if len(sga.Entries) != 3 || sga.Entries[0] != b.Slice(0, 1000) || sga.Entries[2] != b.Slice(3000, 96) {
		t.Fatalf("entries %v", sga.Entries)
	}
	if want := 16 + 3*EntrySize; len(sga.Head) != want {
		t.Fatalf("head of %d bytes, want %d", len(sga.Head), want)
	}
	for name, spoil := range map[string]func(l *BytesList){
		"a value copied":  func(l *BytesList) { l.items[1].buf = mem.Buf{} },
		"a shorter value": func(l *BytesList) { l.items[2].data = l.items[2].data[:0:0] },
		"totals short":    func(l *BytesList) { l.tot.zc-- },
		"a value more": func(l *BytesList) {
			l.items = append(l.items, l.items[0])
			l.tot.nz++
		},
	} {
		l := build()
		spoil(l)
		if err := l.SerializeOnlyOr(&c, 1, &sga, &u); err != ErrModified {
			t.Fatalf("%s: SerializeOnlyOr = %v, want ErrModified", name, err)
		}
		if len(sga.Entries) != 0 {
			t.Fatalf("%s: %d entries left in the SGA", name, len(sga.Entries))
		}
	}
}
