package datapath

import (
	"net/netip"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Segmented is one received packet whose payload is the concatenation of
// Segs: a head in the receiver's registered memory (the datapath copied
// it: the packet's headers and an object's header and copied fields)
// followed by segments that may live in the sender's memory, mapped
// read-only into this process (datapath/shm's zero-copy entries). Decoding
// it in place (wire.DecodeSegments) makes zero-copy fields alias the
// sender's memory: no CPU copies a large value on either side.
type Segmented struct {
	// Segs are the payload's parts, in order; Segs[0] is the head (it may
	// be empty). They are borrowed views, valid while Hold (or a clone of
	// it) is held, and must not be modified. The slice itself belongs to
	// the datapath and is reused after the packet is released.
	Segs [][]byte
	// Hold keeps the packet alive: an owned reference that the receiver
	// must Release. The datapath gives the packet back to its sender (the
	// sender's references are dropped) once Hold and every clone of it
	// were released; wire.DecodeSegments clones it into its arena, so a
	// decoded message keeps the packet alive until the arena's Reset.
	Hold mem.Buf
	From netip.AddrPort
}

// Len is the payload's length.
func (p *Segmented) Len() int {
	n := 0
	for _, s := range p.Segs {
		n += len(s)
	}
	return n
}

// AppendTo appends the payload (every segment, in order) to dst.
func (p *Segmented) AppendTo(dst []byte) []byte {
	for _, s := range p.Segs {
		dst = append(dst, s...)
	}
	return dst
}

// SegmentReceiver is implemented by an Endpoint that can hand received
// packets over as a head plus the sender's segments, without gathering
// them into one buffer (datapath/shm). Recv keeps working on such an
// endpoint and delivers contiguous copies.
type SegmentReceiver interface {
	// RecvSegments is Recv for segmented packets: it fills pkts with up
	// to len(pkts) received packets without blocking and returns how many
	// it filled. Each packet's Hold is owned by the caller.
	RecvSegments(pkts []Segmented) (int, error)
}
