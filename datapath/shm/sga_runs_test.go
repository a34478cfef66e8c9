package shm_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestSendObjectRuns: windows of a few items, in runs (adjacent windows of
// one item), split by other items, by copied values and by the peer's
// zero-copy budget. The receiver gets exactly wire.Flatten's bytes (a run
// extended past an entry that was copied, or across items, would send
// other bytes), the packet has the descriptors expected, the sender holds
// one reference per run of one item while the packet is received, and
// every reference is back after the completion.
func TestSendObjectRuns(t *testing.T) {
	space := testSpace(t)
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app " + t.Name(), Space: space})
	private := memtest.NewPool(t, mem.PoolConfig{Name: "private " + t.Name()}) // not shared: copied
	type win struct{ item, off, n int }
	for _, tc := range []struct {
		name     string
		budget   int64
		wins     []win // item 2 is private (copied)
		wantSegs int   // head included
		wantRefs []int // references the sender holds per item while received
	}{
		{"OneRun", 0, []win{{0, 0, 1000}, {0, 1000, 1000}, {0, 2000, 600}}, 2, []int{1, 0, 0}},
		{"Gap", 0, []win{{0, 0, 1000}, {0, 1001, 1000}}, 3, []int{1, 0, 0}},
		{"Backwards", 0, []win{{0, 1000, 1000}, {0, 0, 1000}}, 3, []int{1, 0, 0}},
		{"OtherItemBetween", 0, []win{{0, 0, 1000}, {1, 0, 1000}, {0, 1000, 1000}}, 4, []int{2, 1, 0}},
		{"CopiedBetween", 0, []win{{0, 0, 1000}, {2, 0, 1000}, {0, 1000, 1000}}, 4, []int{1, 0, 0}},
		// The second window goes over the budget: copied. The third
		// follows it in its item but not the open descriptor's bytes.
		{"Budget", 2600, []win{{0, 0, 2000}, {0, 2000, 2000}, {0, 4000, 600}}, 4, []int{1, 0, 0}},
		{"BudgetRunEnds", 2600, []win{{0, 0, 2000}, {0, 2000, 1000}, {1, 0, 600}}, 4, []int{1, 1, 0}},
		{"CopiedFirst", 0, []win{{2, 0, 1000}, {0, 0, 1000}, {0, 1000, 1000}}, 2, []int{1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), Options: shm.Options{Namespace: testNS,
				Spaces: []*mem.Space{space}, MaxZeroCopyBytes: tc.budget}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.Close() })
			b, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), Options: shm.Options{Namespace: testNS}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			items := []mem.Buf{
				memtest.Alloc(t, app, pattern(6000, 1)),
				memtest.Alloc(t, app, pattern(6000, 2)),
				memtest.Alloc(t, private, pattern(6000, 3)),
			}
			ar := wire.NewArena()
			ar.Threshold = 512
			m := cf.NewListBuffers(ar)
			l := m.InitMessages(len(tc.wins))
			for _, w := range tc.wins {
				l.AppendBuf(items[w.item].Slice(w.off, w.n))
			}
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
			p := recvSegs(t, b)
			if got := p.AppendTo(nil); !bytes.Equal(got, want) {
				t.Fatalf("received %d bytes that differ from wire.Flatten's %d", len(got), len(want))
			}
			if len(p.Segs) != tc.wantSegs {
				t.Errorf("%d segments, want %d", len(p.Segs), tc.wantSegs)
			}
			for i, h := range items {
				if got := h.Refs() - 1; got != tc.wantRefs[i] {
					t.Errorf("item %d: the sender holds %d references, want %d", i, got, tc.wantRefs[i])
				}
			}
			st := a.Stats()
			if st.CopiedBytes+st.ZeroCopyBytes != uint64(len(want)) || st.CopiedEntries+st.ZeroCopyEntries != uint64(1+len(tc.wins)) {
				t.Errorf("stats %+v: want %d bytes and %d entries in all", st, len(want), 1+len(tc.wins))
			}
			memtest.Release(t, p.Hold)
			for i, h := range items {
				waitRefs(t, a, b, h, 1, i)
				memtest.Release(t, h)
			}
			if e := a.Stats().Errors; e != 0 {
				t.Errorf("%d sender errors", e)
			}
		})
	}
}
