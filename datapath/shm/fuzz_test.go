package shm

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// FuzzDescriptors feeds parseDesc arbitrary ring entries and slot tables
// (what a hostile peer controls) against fixed limits: it must never
// panic, and every segment it accepts must lie inside its space and the
// packet within MaxPayload. It also feeds the same bytes to the handshake
// parser, which must reject or return a hello whose geometry passes check.
func FuzzDescriptors(f *testing.F) {
	g := newGeometry(8, 4, 4096)
	seed := func(e uint64, segs ...seg) {
		table := make([]byte, g.maxSegs*descSize)
		for i, s := range segs {
			putDesc(table, i, s)
		}
		f.Add(e, table)
	}
	seed(0)
	seed(1<<32|1, seg{space: 0, n: 4})
	seed(2<<32|3, seg{space: 0, n: 10}, seg{space: 1, n: 100, off: 4096})
	seed(1<<32|9, seg{space: 0, n: 1})
	seed(1<<32|2, seg{space: 2, n: 1})
	seed(1<<32|2, seg{space: 1, n: 100, off: 1<<20 - 10})
	seed(1<<32|2, seg{space: 1, n: 100, off: ^uint64(0) - 50})
	seed(5<<32|2, seg{space: 0, n: 1})
	h := hello{addr: mustAddr("127.0.0.1:7000"), g: g, regionSize: g.size(), maxPayload: 4096, spaces: []uint64{1 << 20}}
	f.Add(uint64(0), h.marshal(nil))
	f.Add(uint64(0), refuseMsg("uid 1 is not allowed"))
	lim := &limits{g: g, maxSegs: 4, maxPayload: 4096, spaces: []uint64{1 << 20}}
	// A peer region for touchBatch, which reads ring entries the peer
	// wrote before parse validates them: it must stay within the region
	// whatever they hold.
	rc := &conn{remote: newRegionOf(make([]byte, g.size()), g)}
	f.Fuzz(func(t *testing.T, e uint64, table []byte) {
		for i := range uint64(g.ringSize) {
			v := e
			if len(table) >= 8*int(i+1) {
				v = binary.LittleEndian.Uint64(table[8*i:])
			}
			*rc.remote.u64(offRings + 8*i) = v
		}
		rc.cons = e >> 7
		rc.touchBatch(rc.cons+uint64(len(table)%(2*int(g.ringSize)+1)), int(e%17))
		out := make([]seg, 0, MaxMaxSegments)
		slot, segs, total, err := parseDesc(e, table, lim, out[:cap(out)])
		if err == nil {
			if slot >= g.slots || uint32(len(segs)) > lim.maxSegs || total > lim.maxPayload {
				t.Fatalf("accepted slot %d, %d segments, %d bytes", slot, len(segs), total)
			}
			var sum uint64
			for _, s := range segs {
				limit := uint64(g.dataCap)
				if s.space > 0 {
					limit = lim.spaces[s.space-1]
				}
				if s.off+uint64(s.n) > limit || s.off > limit {
					t.Fatalf("accepted segment %+v outside its space of %d bytes", s, limit)
				}
				sum += uint64(s.n)
			}
			if sum != total {
				t.Fatalf("total %d, segments sum to %d", total, sum)
			}
		}
		if hh, err := parseMsg(table); err == nil {
			if hh.g.check() != nil || hh.regionSize != hh.g.size() || len(hh.spaces) > MaxPeerSpaces || !hh.addr.IsValid() {
				t.Fatalf("accepted hello %+v", hh)
			}
		}
		if len(table) >= offRings {
			if gg, err := readHeader(table); err == nil && gg.check() != nil {
				t.Fatalf("accepted header %+v", gg)
			}
		}
	})
}

func mustAddr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
