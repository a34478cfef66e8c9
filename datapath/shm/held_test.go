package shm_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// countHold is a datapath.Holder counting its releases.
type countHold struct{ n int }

func (h *countHold) Release() { h.n++ }

// TestSendSegmentsHeld: a held send takes no reference of its own; the
// receiver reads the owner's memory in place; the hold is released exactly
// once, when the receiver releases the packet, or before the call returns
// when the packet is refused, or when the peer goes away.
func TestSendSegmentsHeld(t *testing.T) {
	a, app := openTest(t, netip.AddrPort{})
	b := openBudget(t, testSpace(t), 0) // closed by the test (its cleanup's second Close is ignored)
	v := memtest.Alloc(t, app, pattern(3000, 7))
	var h countHold
	if err := a.SendSegmentsHeld(b.LocalAddr(), []byte("hd"), []mem.Buf{v.Slice(0, 1000), v.Slice(1000, 2000)}, &h); err != nil {
		t.Fatal(err)
	}
	if v.Refs() != 1 {
		t.Fatalf("refs %d after a held send, want 1 (the owner's only)", v.Refs())
	}
	if st := a.Stats(); st.ZeroCopyEntries != 2 || st.ZeroCopyBytes != 3000 {
		t.Errorf("stats %+v: want 2 zero-copy entries of 3000 bytes", st)
	}
	_ = a.Flush()
	p := recvSegs(t, b)
	if got := p.AppendTo(nil); !bytes.Equal(got, append([]byte("hd"), v.Bytes()...)) {
		t.Fatal("payload differs")
	}
	for range 3 {
		_ = b.Flush()
		_ = a.Flush()
	}
	if h.n != 0 {
		t.Fatalf("hold released %d times while the receiver holds the packet", h.n)
	}
	memtest.Release(t, p.Hold)
	for deadline := time.Now().Add(10 * time.Second); h.n == 0; {
		if time.Now().After(deadline) {
			t.Fatal("hold not released after the receiver released the packet")
		}
		_ = b.Flush()
		_ = a.Flush()
		_ = a.Wait(time.Millisecond)
	}

	// Refused: too many segments. Released before the call returns.
	var h2 countHold
	many := make([]mem.Buf, a.MaxSegments())
	for i := range many {
		many[i] = v.Slice(i, 1)
	}
	if err := a.SendSegmentsHeld(b.LocalAddr(), nil, many, &h2); !errors.Is(err, datapath.ErrTooManySegments) || h2.n != 1 {
		t.Fatalf("too many segments: err %v, %d releases; want ErrTooManySegments, 1", err, h2.n)
	}

	// The receiver goes away: the hold is released.
	var h3 countHold
	if err := a.SendSegmentsHeld(b.LocalAddr(), nil, []mem.Buf{v}, &h3); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	p = recvSegs(t, b)
	memtest.Release(t, p.Hold)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); h3.n == 0; {
		if time.Now().After(deadline) {
			t.Fatal("hold not released after the peer closed")
		}
		_ = a.Flush()
		_ = a.Wait(time.Millisecond)
	}
	if h.n != 1 || h3.n != 1 {
		t.Fatalf("releases %d, %d; want 1 each", h.n, h3.n)
	}
	memtest.Release(t, v)
}

// TestReleaseAfterClose: a segmented packet the application releases after
// its endpoint was closed returns its head buffer to the endpoint's pool
// (the pool's accounting returns to zero, checked by memtest at cleanup),
// and its zero-copy segments stay readable until then.
func TestReleaseAfterClose(t *testing.T) {
	a, app := openTest(t, netip.AddrPort{})
	b := openBudget(t, testSpace(t), 0)
	v := memtest.Alloc(t, app, pattern(3000, 9))
	var h countHold
	if err := a.SendSegmentsHeld(b.LocalAddr(), []byte("hd"), []mem.Buf{v}, &h); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	p := recvSegs(t, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := p.AppendTo(nil); !bytes.Equal(got, append([]byte("hd"), v.Bytes()...)) {
		t.Fatal("payload differs after the receiver closed")
	}
	if r := p.Hold.Refs(); r != 1 {
		t.Errorf("refs %d on the head after Close, want 1 (the application's only)", r)
	}
	memtest.Release(t, p.Hold)
	for deadline := time.Now().Add(10 * time.Second); h.n == 0; {
		if time.Now().After(deadline) {
			t.Fatal("hold not released after the peer closed")
		}
		_ = a.Flush()
		_ = a.Wait(time.Millisecond)
	}
	memtest.Release(t, v)
}

// TestHeldReleasedTwice: an application that releases a received packet's
// Hold twice drops the endpoint's own reference with it. The endpoint
// notices that its reference is no longer live (not merely that it is the
// last one: the freed buffer may be allocated and shared again), counts an
// error and still gives the slot back to the sender, whose data reference
// then returns; the head buffer is not leaked.
func TestHeldReleasedTwice(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build panics on the second release, as it should")
	}
	a, app := openTest(t, netip.AddrPort{})
	b, _ := openTest(t, netip.AddrPort{})
	v := memtest.Alloc(t, app, pattern(3000, 5))
	if err := a.SendSegments(b.LocalAddr(), []byte("hd"), []mem.Buf{v}); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	p := recvSegs(t, b)
	if err := p.Hold.Release(); err != nil {
		t.Fatal(err)
	}
	_ = p.Hold.Release() // once too often: the endpoint's reference goes with it
	// The freed head buffer allocated again and shared: a count above one
	// again, in a new generation, must not read as "still held".
	x, err := b.Pool().Alloc(len(p.Segs[0]))
	if err != nil {
		t.Fatal(err)
	}
	y := x.Clone()
	if len(p.Segs[0]) == 0 || &x.Bytes()[0] != &p.Segs[0][0] {
		t.Fatal("the pool did not hand the freed head buffer out again; the test needs it")
	}
	waitRefs(t, a, b, v, 1, 0)
	if e := b.Stats().Errors; e != 1 {
		t.Errorf("receiver errors %d, want 1 (the endpoint's stale reference)", e)
	}
	memtest.Release(t, y)
	memtest.Release(t, x)
	memtest.AssertInUse(t, b.Pool(), 0)
	memtest.Release(t, v)
}
