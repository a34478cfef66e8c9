package shm_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestSendObjectReferencePerItem: the packet holds one reference per run
// of entries of one item: an entry copied by the Selector keeps none (the
// reference taken for it is dropped again), an item that comes back after
// another item's entry takes a second one, and every count is back after
// the completion.
func TestSendObjectReferencePerItem(t *testing.T) {
	space := testSpace(t)
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app " + t.Name(), Space: space})
	a, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), MaxSegments: 4,
		Options: shm.Options{Namespace: testNS, Spaces: []*mem.Space{space}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, _ := openTest(t, netip.AddrPort{})
	wa := memtest.Alloc(t, app, append(pattern(3600, 1), pattern(700, 3)...))
	wb := memtest.Alloc(t, app, pattern(2500, 2))
	ar := wire.NewArena()
	ar.Threshold = 512
	m := cf.NewListBuffers(ar)
	l := m.InitMessages(4)
	// Head + 3 descriptors: the Selector copies the 600 bytes (after the
	// head) and keeps 3000, 2500 and 700 as descriptors.
	l.AppendBuf(wa.Slice(0, 600))
	l.AppendBuf(wa.Slice(600, 3000))
	l.AppendBuf(wb)
	l.AppendBuf(wa.Slice(3600, 700))
	want, err := wire.Flatten(m, []byte("hd"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SendObject(b.LocalAddr(), []byte("hd"), m); err != nil {
		t.Fatal(err)
	}
	if err := ar.Reset(); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	if st := a.Stats(); st.ZeroCopyEntries != 3 || st.ZeroCopyBytes != 3000+2500+700 {
		t.Errorf("stats %+v: want 3 zero-copy entries of 6200 bytes", st)
	}
	p := recvSegs(t, b)
	if !bytes.Equal(p.AppendTo(nil), want) {
		t.Fatal("payload differs from wire.Flatten")
	}
	if wa.Refs() != 3 || wb.Refs() != 2 {
		t.Errorf("references while received: %d and %d, want 3 (the test's and one per run) and 2", wa.Refs(), wb.Refs())
	}
	memtest.Release(t, p.Hold)
	waitRefs(t, a, b, wa, 1, 0)
	waitRefs(t, a, b, wb, 1, 1)
	memtest.Release(t, wa)
	memtest.Release(t, wb)
	memtest.AssertInUse(t, app, 0)
	if e := a.Stats().Errors; e != 0 {
		t.Errorf("%d sender errors", e)
	}
}

// TestSendObjectStaleEntry: an entry whose item was released (the
// arena's reference dropped behind its back) is refused with
// mem.ErrUseAfterRelease after an entry whose reference was already
// taken; nothing is posted and that reference is released with the slot.
func TestSendObjectStaleEntry(t *testing.T) {
	space := testSpace(t)
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app " + t.Name(), Space: space})
	other := memtest.NewPool(t, mem.PoolConfig{Name: "other " + t.Name(), Space: space})
	a, _ := openTest(t, netip.AddrPort{})
	b, _ := openTest(t, netip.AddrPort{})
	live := memtest.Alloc(t, app, pattern(2048, 1))
	gone := memtest.Alloc(t, other, pattern(2048, 2))
	ar := wire.NewArena()
	ar.Threshold = 512
	m := cf.NewListBuffers(ar)
	l := m.InitMessages(3)
	l.AppendBuf(live.Slice(0, 1024))
	l.AppendBuf(live.Slice(1024, 1024))
	l.AppendBuf(gone)
	// The test's reference and the arena's: the item is free.
	memtest.Release(t, gone)
	memtest.Release(t, gone)
	memtest.AssertInUse(t, other, 0)
	err := a.SendObject(b.LocalAddr(), []byte("hd"), m)
	if !errors.Is(err, mem.ErrUseAfterRelease) {
		t.Fatalf("stale entry: %v, want mem.ErrUseAfterRelease", err)
	}
	if live.Refs() != 3 {
		t.Errorf("%d references after the refused send, want 3 (the test's and the arena's two)", live.Refs())
	}
	if st := a.Stats(); st.TxPackets != 0 || st.ZeroCopyEntries != 0 {
		t.Errorf("stats %+v after the refused send: want nothing sent", st)
	}
	if err := ar.Reset(); !errors.Is(err, mem.ErrDoubleRelease) {
		t.Errorf("Reset: %v, want mem.ErrDoubleRelease (the stale entry)", err)
	}
	memtest.Release(t, live)
	memtest.AssertInUse(t, app, 0)
}
