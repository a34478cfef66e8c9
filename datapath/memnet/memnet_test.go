package memnet_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

func TestQueueLimits(t *testing.T) {
	t.Run("RxRing", func(t *testing.T) {
		n := virtualNet(1, memnet.Faults{})
		a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
		b := open(t, n, addrB, datapath.Config{}, memnet.Options{RxRing: 4})
		for i := range 10 {
			sendSeq(t, a, addrB, uint32(i), 10)
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := n.Advance(0); err != nil {
			t.Fatal(err)
		}
		got := drain(t, b, nil)
		if len(got) != 4 || got[3].seq != 3 {
			t.Fatalf("with a 4-buffer ring B got %v", got)
		}
		if st := b.Stats(); st.Drops != 6 {
			t.Errorf("B Stats().Drops = %d, want 6", st.Drops)
		}
		if st := n.Stats(); st.RxDrops != 6 {
			t.Errorf("network RxDrops = %d, want 6", st.RxDrops)
		}
	})
	t.Run("TxQueue", func(t *testing.T) {
		n := virtualNet(1, memnet.Faults{Delay: time.Millisecond})
		a := open(t, n, addrA, datapath.Config{}, memnet.Options{TxQueue: 3})
		b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
		for i := range 5 {
			sendSeq(t, a, addrB, uint32(i), 10)
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		if st := a.Stats(); st.Drops != 2 {
			t.Errorf("A Stats().Drops = %d, want 2", st.Drops)
		}
		if err := n.Advance(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if got := drain(t, b, nil); len(got) != 3 {
			t.Fatalf("B got %v, want the first 3", got)
		}
		if st := n.Stats(); st.QueueDrops != 2 {
			t.Errorf("QueueDrops = %d", st.QueueDrops)
		}
	})
	t.Run("OversizedForReceiver", func(t *testing.T) {
		n := virtualNet(1, memnet.Faults{})
		a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
		b := open(t, n, addrB, datapath.Config{MaxPayload: 100}, memnet.Options{})
		sendSeq(t, a, addrB, 1, 101)
		sendSeq(t, a, addrB, 2, 100)
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := drain(t, b, nil); len(got) != 1 || got[0].seq != 2 {
			t.Fatalf("B got %v", got)
		}
	})
}

// TestEarlyReleaseCorrupts is the memory-safety test: the application gives
// up its references right after sending zero-copy data and reuses the memory
// (allowed, because the datapath holds its own references until the
// simulated DMA). A correct endpoint delivers the original bytes; the same
// scenario with an endpoint that releases at Send (a broken datapath) MUST
// deliver corrupted bytes, which proves the test can see the bug.
func TestEarlyReleaseCorrupts(t *testing.T) {
	for _, broken := range []bool{false, true} {
		for _, api := range []string{"SendSegments", "SendObject"} {
			t.Run(fmt.Sprintf("broken=%v/%s", broken, api), func(t *testing.T) {
				n := virtualNet(1, memnet.Faults{Delay: 100 * time.Microsecond})
				app := memtest.NewPool(t, mem.PoolConfig{Name: "app"})
				a := open(t, n, addrA, datapath.Config{Pool: app}, memnet.Options{})
				b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
				if broken {
					memnet.BreakEarlyRelease(a)
				}
				var want [][]byte
				for i := range 4 {
					val := memtest.Alloc(t, app, bytes.Repeat([]byte{byte('a' + i)}, 3000))
					want = append(want, append([]byte("hdr"), val.Bytes()...))
					var err error
					if api == "SendSegments" {
						err = a.SendSegments(addrB, []byte("hdr"), []mem.Buf{val})
					} else {
						err = a.SendObject(addrB, nil, &dptest.Object{Header: []byte("hdr"), Entries: []mem.Buf{val}})
					}
					if err != nil {
						t.Fatal(err)
					}
					memtest.Release(t, val) // the application is done with it
				}
				if err := a.Flush(); err != nil {
					t.Fatal(err)
				}
				// Reuse: the application allocates new values (from the same
				// pool, same size class) and writes them before the DMA.
				var reused []mem.Buf
				for range 8 {
					reused = append(reused, memtest.Alloc(t, app, bytes.Repeat([]byte{'X'}, 3000)))
				}
				if err := n.Advance(100 * time.Microsecond); err != nil {
					t.Fatal(err)
				}
				pk := make([]datapath.Packet, 8)
				k, err := b.Recv(pk)
				if err != nil || k != 4 {
					t.Fatalf("Recv = %d, %v", k, err)
				}
				corrupted := 0
				for i, p := range pk[:k] {
					if !bytes.Equal(p.Buf.Bytes(), want[i]) {
						corrupted++
					}
					memtest.Release(t, p.Buf)
				}
				for _, r := range reused {
					memtest.Release(t, r)
				}
				if err := a.Flush(); err != nil { // reap completions
					t.Fatal(err)
				}
				if !broken && corrupted != 0 {
					t.Fatalf("%d of 4 packets corrupted by memory reuse after the application's release", corrupted)
				}
				if broken && corrupted == 0 {
					t.Fatal("a datapath releasing at Send went undetected: no packet was corrupted")
				}
				if broken {
					t.Logf("broken datapath: %d of 4 packets corrupted, as expected", corrupted)
				}
			})
		}
	}
}

// TestDuplicateHoldsReferences: with duplication the zero-copy memory must
// stay referenced until the last copy was gathered.
func TestDuplicateHoldsReferences(t *testing.T) {
	n := virtualNet(3, memnet.Faults{Duplicate: 1, Delay: 10 * time.Microsecond, Jitter: 100 * time.Microsecond})
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app"})
	a := open(t, n, addrA, datapath.Config{Pool: app}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	val := memtest.Alloc(t, app, []byte("value"))
	defer memtest.Release(t, val)
	if err := a.SendSegments(addrB, nil, []mem.Buf{val}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	copies := 0
	for step := 0; copies < 2 && step < 200; step++ {
		if err := n.Advance(time.Microsecond); err != nil {
			t.Fatal(err)
		}
		got := drain(t, b, nil)
		copies += len(got)
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		if copies == 1 && val.Refs() != 2 {
			t.Fatalf("after the first of two copies the value has %d refs, want 2", val.Refs())
		}
	}
	if copies != 2 || val.Refs() != 1 {
		t.Fatalf("copies %d, refs %d after both deliveries", copies, val.Refs())
	}
}

func TestCloseCancelsInFlight(t *testing.T) {
	n := virtualNet(1, memnet.Faults{Delay: time.Millisecond})
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app"})
	a := open(t, n, addrA, datapath.Config{Pool: app}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	val := memtest.Alloc(t, app, []byte("in flight"))
	if err := a.SendSegments(addrB, nil, []mem.Buf{val}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if val.Refs() != 2 {
		t.Fatalf("refs %d while in flight", val.Refs())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if val.Refs() != 1 {
		t.Fatalf("refs %d after Close", val.Refs())
	}
	memtest.Release(t, val)
	if err := n.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, b, nil); len(got) != 0 {
		t.Fatalf("a cancelled packet arrived: %v", got)
	}
	if st := n.Stats(); st.Cancelled != 1 {
		t.Fatalf("Cancelled = %d", st.Cancelled)
	}
	// The address is free again.
	a2 := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	_ = a2
}

func TestOpenErrors(t *testing.T) {
	n := virtualNet(1, memnet.Faults{})
	open(t, n, addrA, datapath.Config{}, memnet.Options{})
	if _, err := n.Open(datapath.Config{Local: addrA}, memnet.Options{}); !errors.Is(err, memnet.ErrAddrInUse) {
		t.Errorf("second Open on %v: %v", addrA, err)
	}
	for _, cfg := range []datapath.Config{
		{MaxPayload: -1}, {MaxPayload: memnet.MaxMaxPayload + 1}, {MaxSegments: -3},
		{MaxSegments: memnet.MaxMaxSegments + 1}, {Batch: -1},
	} {
		if ep, err := n.Open(cfg, memnet.Options{}); err == nil {
			ep.Close()
			t.Errorf("Open(%+v) succeeded", cfg)
		}
	}
	if _, err := memnet.Open(datapath.Config{Options: 42}); err == nil {
		t.Error("Open with Options of the wrong type succeeded")
	}
	// Through the registry a failed open returns a nil interface, not a
	// typed nil that a caller's "ep != nil" cleanup would Close (and panic).
	if ep, err := datapath.Open("memnet", datapath.Config{Options: 42}); err == nil || ep != nil {
		t.Errorf(`datapath.Open("memnet") with bad options = %v, %v; want nil and an error`, ep, err)
	}
	// Automatic addresses: distinct, valid, port 0 gets an ephemeral port.
	e1 := open(t, n, netip.AddrPort{}, datapath.Config{}, memnet.Options{})
	e2 := open(t, n, netip.AddrPortFrom(addrA.Addr(), 0), datapath.Config{}, memnet.Options{})
	if !e1.LocalAddr().IsValid() || e2.LocalAddr().Addr() != addrA.Addr() || e2.LocalAddr().Port() == 0 || e1.LocalAddr() == e2.LocalAddr() {
		t.Errorf("automatic addresses %v, %v", e1.LocalAddr(), e2.LocalAddr())
	}
}

// TestManyGoroutines runs pairs of endpoints on their own goroutines over one
// real-time network with faults (for -race): each client sends requests
// and counts echoes; the network's shared state is exercised concurrently.
func TestManyGoroutines(t *testing.T) {
	n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 9, Faults: memnet.Faults{Delay: 20 * time.Microsecond, Jitter: 20 * time.Microsecond, Duplicate: 0.05}})
	const pairs, rounds = 4, 200
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	for p := range pairs {
		srvAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(p)}), 80)
		cliAddr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, 0, byte(p)}), 80)
		stop := make(chan struct{})
		// The server's endpoint exists before any client sends (a packet to
		// an address nobody has opened is dropped); its goroutine owns it.
		pool, err := mem.NewPool(mem.PoolConfig{Name: "srv"})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := n.Open(datapath.Config{Local: srvAddr, Pool: pool}, memnet.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		go func() { // server: echo zero-copy from the receive buffer
			defer wg.Done()
			errs <- func() error {
				pk := make([]datapath.Packet, 8)
				for {
					select {
					case <-stop:
						if err := ep.Close(); err != nil {
							return err
						}
						if pool.InUse() != 0 {
							return fmt.Errorf("server pool InUse %d", pool.InUse())
						}
						return pool.Close()
					default:
					}
					if err := ep.Wait(time.Millisecond); err != nil {
						return err
					}
					k, err := ep.Recv(pk)
					if err != nil {
						return err
					}
					for _, q := range pk[:k] {
						err := ep.SendSegments(q.From, nil, []mem.Buf{q.Buf})
						q.Buf.Release()
						if err != nil {
							return err
						}
					}
					if err := ep.Flush(); err != nil {
						return err
					}
				}
			}()
		}()
		go func() { // client
			defer wg.Done()
			defer close(stop)
			errs <- func() error {
				pool, _ := mem.NewPool(mem.PoolConfig{Name: "cli"})
				ep, err := n.Open(datapath.Config{Local: cliAddr, Pool: pool}, memnet.Options{})
				if err != nil {
					return err
				}
				pk := make([]datapath.Packet, 8)
				got := map[uint32]bool{}
				deadline := time.Now().Add(20 * time.Second)
				for i := 0; len(got) < rounds; {
					if time.Now().After(deadline) {
						return fmt.Errorf("client %d: %d of %d echoes", p, len(got), rounds)
					}
					if i < rounds && i-len(got) < 8 {
						b := binary.LittleEndian.AppendUint32(nil, uint32(i))
						if err := ep.Send(srvAddr, b); err != nil {
							return err
						}
						i++
					}
					if err := ep.Flush(); err != nil {
						return err
					}
					if err := ep.Wait(100 * time.Microsecond); err != nil {
						return err
					}
					k, err := ep.Recv(pk)
					if err != nil {
						return err
					}
					for _, q := range pk[:k] {
						got[binary.LittleEndian.Uint32(q.Buf.Bytes())] = true
						q.Buf.Release()
					}
				}
				if err := ep.Close(); err != nil {
					return err
				}
				return pool.Close()
			}()
		}()
	}
	wg.Wait()
	close(errs)
	t.Logf("network: %+v", n.Stats())
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestWaitRealTimeDelay: a blocked receiver wakes up when a delayed packet
// falls due, without anybody else calling into the network.
func TestWaitRealTimeDelay(t *testing.T) {
	n := memnet.NewNetwork(memnet.NetworkConfig{Faults: memnet.Faults{Delay: 2 * time.Millisecond}})
	a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	sendSeq(t, a, addrB, 5, 10)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []arrival
	for i := 0; i < 100 && len(got) == 0; i++ {
		if err := b.Wait(time.Second); err != nil {
			t.Fatal(err)
		}
		got = drain(t, b, got)
	}
	if len(got) != 1 || got[0].seq != 5 {
		t.Fatalf("got %v", got)
	}
}

func TestRoundTripAllocs(t *testing.T) {
	n := memnet.NewNetwork(memnet.NetworkConfig{})
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app"})
	a := open(t, n, addrA, datapath.Config{Pool: app}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	val := memtest.Alloc(t, app, bytes.Repeat([]byte{1}, 2048))
	defer memtest.Release(t, val)
	obj := &dptest.Object{Header: make([]byte, 16), Copied: make([]byte, 32), Entries: []mem.Buf{val, val}}
	pk := make([]datapath.Packet, 4)
	head := []byte("head")
	rt := func() {
		if err := a.SendObject(addrB, head, obj); err != nil {
			t.Fatal(err)
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		k, err := b.Recv(pk)
		if err != nil || k != 1 {
			t.Fatalf("Recv = %d, %v", k, err)
		}
		pk[0].Buf.Release()
	}
	for range 10 {
		rt()
	}
	if avg := testing.AllocsPerRun(200, rt); avg != 0 {
		t.Fatalf("SendObject+Flush+Recv allocates %v times", avg)
	}
}

func TestFilter(t *testing.T) {
	n := virtualNet(1, memnet.Faults{})
	a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{RxRing: 2})
	n.SetFilter(func(from, to netip.AddrPort, p []byte) bool {
		return from != addrA || binary.LittleEndian.Uint32(p)%2 == 0 // drop odd ones
	})
	for i := range 6 {
		sendSeq(t, a, addrB, uint32(i), 8)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := n.Advance(0); err != nil {
		t.Fatal(err)
	}
	got := drain(t, b, nil)
	if len(got) != 2 || got[0].seq != 0 || got[1].seq != 2 {
		// Only 2 RX buffers: 0 and 2 fill them, 4 is an RX drop; the
		// filtered packets must not have consumed buffers.
		t.Fatalf("got %v", got)
	}
	if st := n.Stats(); st.Filtered != 3 || st.RxDrops != 1 {
		t.Fatalf("stats %+v", st)
	}
	n.SetFilter(nil)
}

func TestCloseWithUnreleasedPacketOwnPool(t *testing.T) {
	n := virtualNet(1, memnet.Faults{})
	a, err := n.Open(datapath.Config{Local: addrA}, memnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.Open(datapath.Config{Local: addrB}, memnet.Options{RxRing: 1})
	if err != nil {
		t.Fatal(err)
	}
	sendSeq(t, a, addrB, 1, 8)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	pk := make([]datapath.Packet, 1)
	if k, err := b.Recv(pk); k != 1 || err != nil {
		t.Fatal(k, err)
	}
	if err := b.Close(); !errors.Is(err, mem.ErrInUse) {
		t.Fatalf("Close while the application holds a packet of the endpoint's own pool: %v, want ErrInUse", err)
	}
	memtest.Release(t, pk[0].Buf)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSendReleasedBuf(t *testing.T) {
	n := virtualNet(1, memnet.Faults{})
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app"})
	a := open(t, n, addrA, datapath.Config{Pool: app}, memnet.Options{})
	open(t, n, addrB, datapath.Config{}, memnet.Options{})
	good := memtest.Alloc(t, app, []byte("good"))
	defer memtest.Release(t, good)
	stale := memtest.Alloc(t, app, []byte("stale"))
	memtest.Release(t, stale)
	if err := a.SendSegments(addrB, nil, []mem.Buf{good, stale}); !errors.Is(err, mem.ErrUseAfterRelease) {
		t.Errorf("SendSegments with a released segment: %v, want ErrUseAfterRelease", err)
	}
	if err := a.SendObject(addrB, nil, &dptest.Object{Entries: []mem.Buf{good, stale}}); !errors.Is(err, mem.ErrUseAfterRelease) {
		t.Errorf("SendObject with a released entry: %v, want ErrUseAfterRelease", err)
	}
	if good.Refs() != 1 {
		t.Errorf("good segment has %d refs after the failed sends", good.Refs())
	}
}

// TestCloseLingersRealTime: on a real-time network Close waits for a
// delayed packet to be delivered instead of cancelling it.
func TestCloseLingersRealTime(t *testing.T) {
	n := memnet.NewNetwork(memnet.NetworkConfig{Faults: memnet.Faults{Delay: 2 * time.Millisecond}})
	a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	sendSeq(t, a, addrB, 9, 10)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, b, nil); len(got) != 1 || got[0].seq != 9 {
		t.Fatalf("after the sender's Close B got %v", got)
	}
	if st := n.Stats(); st.Cancelled != 0 {
		t.Fatalf("Cancelled = %d", st.Cancelled)
	}
}
