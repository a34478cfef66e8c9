package shm_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

var _ datapath.SGASender = (*shm.Endpoint)(nil)

// TestSendSGAMatchesSendObject: SendSGA of a generated message sends what
// SendObject of it sends: the same bytes (wire.Flatten's after the head),
// the same statistics, one reference per run of one item while the packet
// is received, every reference back after the completion. A closed
// endpoint refuses SendSGA with ErrClosed.
func TestSendSGAMatchesSendObject(t *testing.T) {
	a, app := openTest(t, netip.AddrPort{})
	b, _ := openTest(t, netip.AddrPort{})
	whole := memtest.Alloc(t, app, append(pattern(2048, 1), pattern(2048, 2)...))
	other := memtest.Alloc(t, app, pattern(900, 3))
	ar := wire.NewArena()
	ar.Threshold = 512
	build := func() *cf.ListBuffers {
		m := cf.NewListBuffers(ar)
		l := m.InitMessages(4)
		l.AppendBuf(whole.Slice(0, 2048))
		l.AppendBuf(whole.Slice(2048, 2048))
		l.Append([]byte("copied"))
		l.AppendBuf(other)
		return m
	}
	var stats [2]datapath.Stats
	for i, send := range []func(m *cf.ListBuffers) error{
		func(m *cf.ListBuffers) error { return a.SendObject(b.LocalAddr(), []byte("hd"), m) },
		func(m *cf.ListBuffers) error { return a.SendSGA(b.LocalAddr(), []byte("hd"), m) },
	} {
		before := a.Stats()
		m := build()
		want, err := wire.Flatten(m, []byte("hd"))
		if err != nil {
			t.Fatal(err)
		}
		if err := send(m); err != nil {
			t.Fatal(err)
		}
		if err := ar.Reset(); err != nil { // the datapath holds its own references
			t.Fatal(err)
		}
		_ = a.Flush()
		after := a.Stats()
		stats[i] = datapath.Stats{
			ZeroCopyEntries: after.ZeroCopyEntries - before.ZeroCopyEntries,
			ZeroCopyBytes:   after.ZeroCopyBytes - before.ZeroCopyBytes,
			CopiedEntries:   after.CopiedEntries - before.CopiedEntries,
			CopiedBytes:     after.CopiedBytes - before.CopiedBytes,
			TxPackets:       after.TxPackets - before.TxPackets,
		}
		p := recvSegs(t, b)
		if got := p.AppendTo(nil); !bytes.Equal(got, want) {
			t.Fatalf("send %d: received %d bytes, want wire.Flatten's %d", i, len(got), len(want))
		}
		if whole.Refs() != 2 || other.Refs() != 2 {
			t.Errorf("send %d: references %d and %d while the packet is received, want 2 and 2", i, whole.Refs(), other.Refs())
		}
		memtest.Release(t, p.Hold)
		waitRefs(t, a, b, whole, 1, 0)
		waitRefs(t, a, b, other, 1, 1)
	}
	if stats[0] != stats[1] || stats[1].TxPackets != 1 || stats[1].ZeroCopyEntries != 3 {
		t.Errorf("statistics of SendObject %+v, of SendSGA %+v", stats[0], stats[1])
	}
	if e := a.Stats().Errors; e != 0 {
		t.Errorf("%d sender errors", e)
	}
	memtest.Release(t, whole)
	memtest.Release(t, other)

	c, err := shm.Open(datapath.Config{Pool: memtest.NewPool(t), Options: shm.Options{Namespace: testNS}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	m := cf.NewListBuffers(ar)
	m.InitMessages(1).Append([]byte("x"))
	if err := c.SendSGA(b.LocalAddr(), nil, m); !errors.Is(err, datapath.ErrClosed) {
		t.Errorf("SendSGA of a closed endpoint: %v, want ErrClosed", err)
	}
	if err := ar.Reset(); err != nil {
		t.Fatal(err)
	}
}
