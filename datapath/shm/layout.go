package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// The shared region of one side of a connection (one memfd, written only
// by its owner, mapped read-only by the peer):
//
//	offset 0    header: magic, version and the geometry below (hdr*)
//	offset 64   txProd     u64  producer index of the descriptor ring
//	offset 128  complProd  u64  producer index of the completion ring
//	offset 192  complCons  u64  how far the owner consumed the PEER's completion ring
//	offset 256  sleeping   u32  1 while the owner may block in Wait (wake it by eventfd)
//	offset 320  descriptor ring: ringSize entries of u64 (nseg<<32 | slot)
//	            completion ring: complRing entries of u32 (a slot of the peer)
//	page-aligned: slots × slotSize bytes of TX slots
//
// A TX slot starts with maxSegs segment descriptors of 16 bytes
// (space u32, length u32, offset u64) followed by the slot's data area.
// Space 0 is the slot's own data area (heads and copied bytes; the offset
// is relative to the data area); space k >= 1 is the sender's k-th shared
// mem.Space (the offset is relative to the space's base).
//
// A descriptor ring entry is posted when its slot is filled; the slot is
// reused only after the receiver posted it on its completion ring, so at
// most `slots` entries are outstanding and ringSize >= slots never
// overflows.
const (
	regionMagic   = 0x31304d4853464330 // "0CFSHM01" little-endian
	regionVersion = 1

	offTxProd    = 64
	offComplProd = 128
	offComplCons = 192
	offSleeping  = 256
	offRings     = 320

	descSize  = 16
	pageSize  = 4096
	complRing = MaxSlots // completion ring entries (>= any peer's slots)
)

// Limits of the protocol (a peer announcing more is refused).
const (
	// MaxSlots bounds Options.Slots (TX slots, hence packets in flight,
	// per connection and direction).
	MaxSlots = 4096
	// MaxMaxSegments bounds Config.MaxSegments.
	MaxMaxSegments = 256
	// MaxMaxPayload bounds Config.MaxPayload (and a slot's data area).
	MaxMaxPayload = 64 << 20
	// MaxPeerSpaces bounds the shared spaces one peer may announce.
	MaxPeerSpaces = 16
)

// geometry is the layout of one side's region.
type geometry struct {
	slots    uint32 // TX slots
	ringSize uint32 // descriptor ring entries (power of two >= slots)
	maxSegs  uint32 // segment descriptors per slot
	slotSize uint32 // bytes per slot (table + data), page multiple
	dataCap  uint32 // bytes of a slot's data area
}

func newGeometry(slots, maxSegs, maxPayload int) geometry {
	ring := uint32(1)
	for ring < uint32(slots) {
		ring <<= 1
	}
	table := uint32(maxSegs) * descSize
	size := (table + uint32(maxPayload) + pageSize - 1) &^ (pageSize - 1)
	return geometry{slots: uint32(slots), ringSize: ring, maxSegs: uint32(maxSegs), slotSize: size, dataCap: size - table}
}

func (g geometry) complOff() uint64 { return offRings + 8*uint64(g.ringSize) }

func (g geometry) slotsOff() uint64 {
	end := g.complOff() + 4*complRing
	return (end + pageSize - 1) &^ (pageSize - 1)
}

func (g geometry) size() uint64 { return g.slotsOff() + uint64(g.slots)*uint64(g.slotSize) }

// check validates a geometry announced by a peer.
func (g geometry) check() error {
	switch {
	case g.slots == 0 || g.slots > MaxSlots:
		return fmt.Errorf("slots %d not in [1, %d]", g.slots, MaxSlots)
	case g.ringSize < g.slots || g.ringSize&(g.ringSize-1) != 0 || g.ringSize > 2*MaxSlots:
		return fmt.Errorf("ring size %d is not a power of two >= slots %d", g.ringSize, g.slots)
	case g.maxSegs == 0 || g.maxSegs > MaxMaxSegments:
		return fmt.Errorf("segments per slot %d not in [1, %d]", g.maxSegs, MaxMaxSegments)
	case g.slotSize%pageSize != 0 || uint64(g.slotSize) > MaxMaxPayload+MaxMaxSegments*descSize+pageSize:
		return fmt.Errorf("slot size %d is not a page multiple within limits", g.slotSize)
	case uint64(g.maxSegs)*descSize >= uint64(g.slotSize) || g.dataCap != g.slotSize-g.maxSegs*descSize:
		return fmt.Errorf("slot data area %d inconsistent with slot size %d", g.dataCap, g.slotSize)
	}
	return nil
}

// region is a mapped shared region (ours read-write, a peer's read-only).
type region struct {
	mem     []byte
	g       geometry
	slots   uint64 // g.slotsOff()
	complAt uint64 // g.complOff()
}

func newRegionOf(m []byte, g geometry) *region {
	return &region{mem: m, g: g, slots: g.slotsOff(), complAt: g.complOff()}
}

func (r *region) u64(off uint64) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *region) u32(off uint64) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

func (r *region) loadTxProd() uint64    { return atomic.LoadUint64(r.u64(offTxProd)) }
func (r *region) loadComplProd() uint64 { return atomic.LoadUint64(r.u64(offComplProd)) }
func (r *region) loadComplCons() uint64 { return atomic.LoadUint64(r.u64(offComplCons)) }
func (r *region) sleeping() bool        { return atomic.LoadUint32(r.u32(offSleeping)) != 0 }

// descEntry reads ring entry i (once, atomically: a peer may be writing).
func (r *region) descEntry(i uint64) uint64 {
	return atomic.LoadUint64(r.u64(offRings + 8*(i&uint64(r.g.ringSize-1))))
}

// complEntry reads completion ring entry i.
func (r *region) complEntry(i uint64) uint32 {
	return atomic.LoadUint32(r.u32(r.complAt + 4*(i%complRing)))
}

// slot returns slot s's bytes (s < g.slots).
func (r *region) slot(s uint32) []byte {
	off := r.slots + uint64(s)*uint64(r.g.slotSize)
	return r.mem[off : off+uint64(r.g.slotSize) : off+uint64(r.g.slotSize)]
}

// initHeader writes the header of a fresh (zeroed) region of ours.
func (r *region) initHeader() {
	h := r.mem[:64]
	binary.LittleEndian.PutUint64(h[0:], regionMagic)
	binary.LittleEndian.PutUint32(h[8:], regionVersion)
	binary.LittleEndian.PutUint32(h[12:], r.g.slots)
	binary.LittleEndian.PutUint32(h[16:], r.g.ringSize)
	binary.LittleEndian.PutUint32(h[20:], r.g.maxSegs)
	binary.LittleEndian.PutUint32(h[24:], r.g.slotSize)
	binary.LittleEndian.PutUint32(h[28:], r.g.dataCap)
}

// readHeader parses a peer region's header; the geometry is read once and
// kept locally (the peer could change its header later).
func readHeader(h []byte) (geometry, error) {
	if len(h) < offRings {
		return geometry{}, errors.New("region smaller than its header")
	}
	if binary.LittleEndian.Uint64(h[0:]) != regionMagic || binary.LittleEndian.Uint32(h[8:]) != regionVersion {
		return geometry{}, errors.New("bad region magic or version")
	}
	g := geometry{
		slots:    binary.LittleEndian.Uint32(h[12:]),
		ringSize: binary.LittleEndian.Uint32(h[16:]),
		maxSegs:  binary.LittleEndian.Uint32(h[20:]),
		slotSize: binary.LittleEndian.Uint32(h[24:]),
		dataCap:  binary.LittleEndian.Uint32(h[28:]),
	}
	return g, g.check()
}

// seg is one validated segment of a received packet.
type seg struct {
	space uint32 // 0: the slot's data area; k: the peer's space k-1
	n     uint32
	off   uint64
}

// Reasons a received descriptor is dropped (counted in Stats).
var (
	errBadSlot     = errors.New("shm: descriptor names a slot out of range")
	errSlotHeld    = errors.New("shm: descriptor names a slot still held by the receiver")
	errBadSegCount = errors.New("shm: descriptor has too many segments")
	errBadSpace    = errors.New("shm: segment names an unknown space")
	errBadRange    = errors.New("shm: segment range outside its space")
	errTooLarge    = errors.New("shm: packet larger than MaxPayload")
)

// limits are what parseDesc checks a peer's descriptors against.
type limits struct {
	g          geometry // the peer's geometry (read once at the handshake)
	maxSegs    uint32   // our own MaxSegments
	maxPayload uint64   // our own MaxPayload
	spaces     []uint64 // sizes of the peer's spaces as mapped here
}

// parseDesc validates ring entry e and the segment table of its slot
// (table: the slot's first maxSegs*16 bytes, in the peer's memory: every
// field is read exactly once) into out. It returns the slot, the segments
// and the payload length. A slot out of range returns errBadSlot (no slot
// to complete); other errors name a valid slot, which the receiver
// completes so that an honest but confused sender gets it back.
func parseDesc(e uint64, table []byte, lim *limits, out []seg) (slot uint32, segs []seg, total uint64, err error) {
	slot, nseg := uint32(e), uint32(e>>32)
	if slot >= lim.g.slots {
		return slot, nil, 0, errBadSlot
	}
	if nseg > lim.g.maxSegs || nseg > lim.maxSegs || int(nseg) > len(out) || uint64(nseg)*descSize > uint64(len(table)) {
		return slot, nil, 0, errBadSegCount
	}
	segs = out[:0]
	for i := range nseg {
		d := table[i*descSize : i*descSize+descSize : i*descSize+descSize]
		s := seg{
			space: binary.LittleEndian.Uint32(d[0:]),
			n:     binary.LittleEndian.Uint32(d[4:]),
			off:   binary.LittleEndian.Uint64(d[8:]),
		}
		var limit uint64
		switch {
		case s.space == 0:
			limit = uint64(lim.g.dataCap)
		case uint64(s.space) <= uint64(len(lim.spaces)):
			limit = lim.spaces[s.space-1]
		default:
			return slot, nil, 0, errBadSpace
		}
		if s.off > limit || uint64(s.n) > limit-s.off {
			return slot, nil, 0, errBadRange
		}
		total += uint64(s.n)
		if total > lim.maxPayload {
			return slot, nil, 0, errTooLarge
		}
		segs = append(segs, s)
	}
	return slot, segs, total, nil
}

// putDesc writes segment descriptor i of a slot table of ours.
func putDesc(table []byte, i int, s seg) {
	d := (*[descSize]byte)(table[i*descSize:]) // one bounds check
	binary.LittleEndian.PutUint32(d[0:], s.space)
	binary.LittleEndian.PutUint32(d[4:], s.n)
	binary.LittleEndian.PutUint64(d[8:], s.off)
}

// copyHead copies src to the start of dst (which must hold it) and
// returns len(src). A packet's head is usually a few bytes (an
// application header): from 8 to 16 bytes it takes two overlapping
// 8-byte moves instead of a call to memmove.
func copyHead(dst, src []byte) int {
	if n := len(src); n >= 8 && n <= 16 && n <= len(dst) {
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src))
		binary.LittleEndian.PutUint64(dst[n-8:n], binary.LittleEndian.Uint64(src[n-8:n]))
		return n
	}
	return copy(dst, src)
}
