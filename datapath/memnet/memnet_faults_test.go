package memnet_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

var (
	addrA = netip.MustParseAddrPort("10.0.0.1:1000")
	addrB = netip.MustParseAddrPort("10.0.0.2:2000")
	addrC = netip.MustParseAddrPort("10.0.1.3:3000")
)

// open makes an endpoint with its own memtest pool (checked for leaks at
// the end of the test) and closes it before the pool is checked.
func open(t testing.TB, n *memnet.Network, local netip.AddrPort, cfg datapath.Config, o memnet.Options) *memnet.Endpoint {
	t.Helper()
	cfg.Local = local
	if cfg.Pool == nil {
		cfg.Pool = memtest.NewPool(t, mem.PoolConfig{Name: local.String()})
	}
	ep, err := n.Open(cfg, o)
	if err != nil {
		t.Fatalf("Open(%v): %v", local, err)
	}
	t.Cleanup(func() {
		if err := ep.Close(); err != nil && !errors.Is(err, datapath.ErrClosed) {
			t.Errorf("Close(%v): %v", local, err)
		}
	})
	return ep
}

func virtualNet(seed uint64, f memnet.Faults) *memnet.Network {
	return memnet.NewNetwork(memnet.NetworkConfig{Seed: seed, Virtual: true, Faults: f})
}

type arrival struct {
	seq uint32
	at  time.Duration
}

// drain receives everything ready at ep, recording sequence numbers (the
// first 4 payload bytes) and the network time, and releases the packets.
func drain(t testing.TB, ep *memnet.Endpoint, out []arrival) []arrival {
	t.Helper()
	pk := make([]datapath.Packet, 16)
	for {
		k, err := ep.Recv(pk)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pk[:k] {
			out = append(out, arrival{binary.LittleEndian.Uint32(p.Buf.Bytes()), ep.Network().Now()})
			memtest.Release(t, p.Buf)
		}
		if k == 0 {
			return out
		}
	}
}

func sendSeq(t testing.TB, ep *memnet.Endpoint, dst netip.AddrPort, seq uint32, size int) {
	t.Helper()
	p := make([]byte, max(size, 4))
	binary.LittleEndian.PutUint32(p, seq)
	if err := ep.Send(dst, p); err != nil {
		t.Fatal(err)
	}
}

// scenario sends count packets A->B under faults f on a virtual network with
// the given seed, one every tick, and returns what arrived when.
func scenario(t *testing.T, seed uint64, f memnet.Faults, count int, tick time.Duration) ([]arrival, memnet.NetworkStats) {
	n := virtualNet(seed, f)
	a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{RxRing: 1024})
	var got []arrival
	for i := range count {
		sendSeq(t, a, addrB, uint32(i), 100)
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := n.Advance(tick); err != nil {
			t.Fatal(err)
		}
		got = drain(t, b, got)
	}
	for step := 0; n.Pending() > 0 && step < 1e6; step++ {
		if err := n.Advance(tick); err != nil {
			t.Fatal(err)
		}
		got = drain(t, b, got)
	}
	if err := a.Flush(); err != nil { // reap the last completions
		t.Fatal(err)
	}
	return got, n.Stats()
}

func TestFaults(t *testing.T) {
	const count = 400
	for _, tc := range []struct {
		name   string
		f      memnet.Faults
		seeded bool // outcome depends on the seed
		check  func(t *testing.T, got []arrival, st memnet.NetworkStats)
	}{
		{"None", memnet.Faults{}, false, func(t *testing.T, got []arrival, st memnet.NetworkStats) {
			if len(got) != count || !inOrder(got) {
				t.Errorf("got %d packets (in order: %v), want %d in order", len(got), inOrder(got), count)
			}
		}},
		{"Loss", memnet.Faults{Loss: 0.3}, true, func(t *testing.T, got []arrival, st memnet.NetworkStats) {
			if int(st.Lost)+len(got) != count || st.Lost < count/5 || st.Lost > count*2/5 {
				t.Errorf("lost %d, received %d of %d at Loss 0.3", st.Lost, len(got), count)
			}
			if !inOrder(got) || hasDup(got) {
				t.Error("loss alone reordered or duplicated packets")
			}
		}},
		{"Duplicate", memnet.Faults{Duplicate: 0.25}, true, func(t *testing.T, got []arrival, st memnet.NetworkStats) {
			if len(got) != count+int(st.Duplicated) || st.Duplicated < count/8 || st.Duplicated > count*3/8 {
				t.Errorf("received %d with %d duplicates of %d at Duplicate 0.25", len(got), st.Duplicated, count)
			}
			if !hasDup(got) {
				t.Error("no duplicate received")
			}
		}},
		{"Reorder", memnet.Faults{Reorder: 0.2, ReorderDelay: 5 * time.Microsecond}, true, func(t *testing.T, got []arrival, st memnet.NetworkStats) {
			if len(got) != count || inOrder(got) || st.Reordered == 0 {
				t.Errorf("received %d (in order: %v, reordered %d), want all %d, some out of order", len(got), inOrder(got), st.Reordered, count)
			}
		}},
		{"DelayJitter", memnet.Faults{Delay: 50 * time.Microsecond, Jitter: 20 * time.Microsecond}, true, func(t *testing.T, got []arrival, st memnet.NetworkStats) {
			if len(got) != count {
				t.Errorf("received %d of %d", len(got), count)
			}
			// Packet i was sent at i ticks (1 µs); it arrives at or after
			// i+50 µs and is drained at the first tick after that.
			for _, a := range got {
				sent := time.Duration(a.seq) * time.Microsecond
				if d := a.at - sent; d < 50*time.Microsecond || d > 71*time.Microsecond {
					t.Fatalf("packet %d: one-way time %v outside [50µs, 71µs]", a.seq, d)
				}
			}
			if inOrder(got) {
				t.Error("20µs jitter on 1µs spacing never reordered")
			}
		}},
		{"Bandwidth", memnet.Faults{BitsPerSecond: 8e6}, false, func(t *testing.T, got []arrival, st memnet.NetworkStats) {
			// 100 B at 8 Mbit/s = 100 µs per packet, sent every 1 µs: the
			// link is the bottleneck, packet i leaves at (i+1)*100 µs.
			if len(got) != count || !inOrder(got) {
				t.Fatalf("received %d (in order %v)", len(got), inOrder(got))
			}
			for _, a := range got {
				want := time.Duration(a.seq+1) * 100 * time.Microsecond
				if a.at < want || a.at > want+time.Microsecond {
					t.Fatalf("packet %d drained at %v, want just after %v", a.seq, a.at, want)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got1, st1 := scenario(t, 42, tc.f, count, time.Microsecond)
			got2, st2 := scenario(t, 42, tc.f, count, time.Microsecond)
			if !slices.Equal(got1, got2) || st1 != st2 {
				t.Fatal("same seed, different outcome")
			}
			tc.check(t, got1, st1)
			got3, _ := scenario(t, 43, tc.f, count, time.Microsecond)
			if tc.seeded && slices.Equal(got1, got3) {
				t.Error("different seeds, identical outcome")
			}
		})
	}
}

func inOrder(got []arrival) bool {
	return slices.IsSortedFunc(got, func(a, b arrival) int { return int(a.seq) - int(b.seq) })
}

func hasDup(got []arrival) bool {
	seen := map[uint32]bool{}
	for _, a := range got {
		if seen[a.seq] {
			return true
		}
		seen[a.seq] = true
	}
	return false
}

func TestDelayVirtualClock(t *testing.T) {
	n := virtualNet(1, memnet.Faults{Delay: time.Millisecond})
	a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	sendSeq(t, a, addrB, 7, 10)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := n.Advance(999 * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, b, nil); len(got) != 0 {
		t.Fatalf("delivered after 999µs of a 1ms delay: %v", got)
	}
	if err := n.Advance(time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, b, nil); len(got) != 1 || got[0].seq != 7 || got[0].at != time.Millisecond {
		t.Fatalf("after 1ms: %v", got)
	}
	if err := n.Advance(-1); err == nil {
		t.Error("Advance(-1) succeeded")
	}
	if err := memnet.NewNetwork(memnet.NetworkConfig{}).Advance(1); !errors.Is(err, memnet.ErrNotVirtual) {
		t.Errorf("Advance on a real-time network: %v", err)
	}
}

func TestPartition(t *testing.T) {
	n := virtualNet(1, memnet.Faults{Delay: 10 * time.Microsecond})
	a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	c := open(t, n, addrC, datapath.Config{}, memnet.Options{})
	step := func() { // flush everyone and let the network run
		for _, ep := range []*memnet.Endpoint{a, b, c} {
			if err := ep.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.Advance(time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	// 10.0.0.0/24 (A, B) vs 10.0.1.0/24 (C).
	id := n.Partition([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, []netip.Prefix{netip.MustParsePrefix("10.0.1.0/24")})
	sendSeq(t, a, addrB, 1, 10) // same side: delivered
	sendSeq(t, a, addrC, 2, 10) // across: dropped
	sendSeq(t, c, addrA, 3, 10) // across, other direction: dropped
	step()
	if got := drain(t, b, nil); len(got) != 1 {
		t.Fatalf("B got %v", got)
	}
	if got := drain(t, c, nil); len(got) != 0 {
		t.Fatalf("C got %v across the partition", got)
	}
	if got := drain(t, a, nil); len(got) != 0 {
		t.Fatalf("A got %v across the partition", got)
	}
	if st := n.Stats(); st.PartitionDrops != 2 {
		t.Fatalf("PartitionDrops = %d, want 2", st.PartitionDrops)
	}
	// A packet in flight when a partition forms is lost too.
	n.Heal(id)
	sendSeq(t, a, addrC, 4, 10)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	id = n.Partition([]netip.Prefix{netip.PrefixFrom(addrA.Addr(), 32)}, []netip.Prefix{netip.PrefixFrom(addrC.Addr(), 32)})
	step()
	if got := drain(t, c, nil); len(got) != 0 {
		t.Fatalf("C got %v sent before the partition formed", got)
	}
	n.HealAll()
	sendSeq(t, a, addrC, 5, 10)
	sendSeq(t, c, addrA, 6, 10)
	step()
	if got := drain(t, c, nil); len(got) != 1 || got[0].seq != 5 {
		t.Fatalf("after healing C got %v", got)
	}
	if got := drain(t, a, nil); len(got) != 1 || got[0].seq != 6 {
		t.Fatalf("after healing A got %v", got)
	}
	_ = id
}

func TestLinkFaults(t *testing.T) {
	n := virtualNet(1, memnet.Faults{})
	a := open(t, n, addrA, datapath.Config{}, memnet.Options{})
	b := open(t, n, addrB, datapath.Config{}, memnet.Options{})
	n.SetLinkFaults(addrB.Addr(), addrA.Addr(), memnet.Faults{Loss: 1})
	sendSeq(t, a, addrB, 1, 10)
	sendSeq(t, b, addrA, 2, 10)
	for _, ep := range []*memnet.Endpoint{a, b} {
		if err := ep.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Advance(0); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, b, nil); len(got) != 1 {
		t.Fatalf("A->B (no faults) delivered %v", got)
	}
	if got := drain(t, a, nil); len(got) != 0 {
		t.Fatalf("B->A (Loss 1) delivered %v", got)
	}
	n.ClearLinkFaults()
	sendSeq(t, b, addrA, 3, 10)
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, a, nil); len(got) != 1 {
		t.Fatalf("B->A after ClearLinkFaults delivered %v", got)
	}
}
