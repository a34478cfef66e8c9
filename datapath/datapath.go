// Package datapath moves packets in and out of a process with
// scatter-gather, completion-driven release of zero-copy memory, and
// serialize-and-send of wire.Objects.
//
// An Endpoint is owned by one goroutine. Every method may be called only by
// that goroutine; a call that overlaps another call on the same endpoint
// returns ErrConcurrentUse instead of corrupting state.
//
// Memory lifetimes: a received Packet.Buf is a reference owned by the caller
// (Release it when done; decoded messages may alias it until then). Segments
// passed to SendSegments and entries reported by SendObject's object are
// borrowed for the call: the endpoint takes its own references and releases
// them only when the send has completed (immediately after a copying syscall,
// at the completion notification for MSG_ZEROCOPY or AF_XDP, after the
// simulated DMA for memnet).
package datapath

import (
	"errors"
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Packet is one received datagram payload.
type Packet struct {
	// Buf holds the payload (after datapath framing) in registered memory.
	// It is an owned reference: the receiver must Release it.
	Buf  mem.Buf
	From netip.AddrPort
}

// Endpoint sends and receives packets for one goroutine.
type Endpoint interface {
	// LocalAddr is the address peers send to.
	LocalAddr() netip.AddrPort
	// MaxPayload is the largest payload one packet carries.
	MaxPayload() int
	// MaxSegments is the largest number of scatter-gather segments one
	// packet may have, the head included.
	MaxSegments() int

	// Send queues one packet whose payload is a copy of p.
	Send(dst netip.AddrPort, p []byte) error
	// SendSegments queues one packet made of head (copied into a TX buffer)
	// followed by segs, sent zero-copy. segs are borrowed; the endpoint
	// holds its own references until the send completes.
	SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error
	// SendObject is serialize-and-send: one TX buffer holds head, the
	// object header and its copied fields; each zero-copy entry becomes one
	// more scatter-gather entry. When an object has more entries than
	// MaxSegments allows, the smallest are copied instead.
	SendObject(dst netip.AddrPort, head []byte, obj wire.Object) error
	// Flush sends everything queued and reaps completed sends.
	Flush() error

	// Recv fills pkts with up to len(pkts) received packets without
	// blocking and returns how many it filled (0 when none is ready). It
	// may return packets together with an error (a failed completion
	// reap, no free RX buffer for the rest of the batch): the n packets
	// are valid and owned by the caller either way.
	Recv(pkts []Packet) (int, error)
	// Wait blocks until a packet may be ready or timeout elapses; it is for
	// idle endpoints that should not busy-poll.
	Wait(timeout time.Duration) error

	// Stats returns the endpoint's counters.
	Stats() Stats
	// Close flushes, waits for outstanding completions (bounded), releases
	// every reference the endpoint holds and frees its resources.
	Close() error
}

// Holder is what a HeldSender keeps instead of references to a packet's
// segments: its owner guarantees that the segments' memory stays valid and
// unmodified until Release is called.
type Holder interface {
	// Release tells the owner that the datapath no longer reads the
	// segments. It is called once per SendSegmentsHeld, from one of the
	// endpoint's own calls (on the goroutine using the endpoint).
	Release()
}

// HeldSender is implemented by an Endpoint that can send segments kept
// alive by their owner instead of taking a reference to each: the owner
// (e.g. an RPC message that holds the segments' references anyway) saves
// a clone and a release per segment.
type HeldSender interface {
	// SendSegmentsHeld is SendSegments with segs borrowed until h.Release:
	// the endpoint takes no reference of its own. It calls h.Release
	// exactly once whatever it returns: before returning when the packet
	// was not queued, else when the send completed (or its peer went away,
	// or the endpoint closed).
	SendSegmentsHeld(dst netip.AddrPort, head []byte, segs []mem.Buf, h Holder) error
}

// SGAMessage is a message that serializes itself into a wire.SGA: every
// generated message has this method (wire.SerializeSGA without its
// interface assertion).
type SGAMessage interface {
	SerializeSGA(sga *wire.SGA) error
}

// SGASender is implemented by an Endpoint whose SendObject has a path of
// its own for an SGAMessage. A caller that sends generated messages
// asserts SGASender once (at setup) and calls SendSGA, instead of letting
// SendObject assert the message's type on every send.
type SGASender interface {
	// SendSGA is SendObject(dst, head, m): the same packet, contract and
	// errors.
	SendSGA(dst netip.AddrPort, head []byte, m SGAMessage) error
}

// HybridThresholder is implemented by an Endpoint that knows from which
// field size a value is cheaper to send as its own scatter-gather entry
// than to copy next to the header: the threshold of Cornflakes' hybrid
// mode on this datapath, measured with `cornflakes calibrate` (the paper
// calibrates it per NIC; 512 bytes on its Mellanox NICs). Applications
// use it for wire.Arena.Threshold; HybridThreshold returns the value for
// the datapath's current mode.
type HybridThresholder interface {
	HybridThreshold() int
}

// HybridThreshold returns ep's hybrid threshold, or wire.DefaultThreshold
// when ep does not report one.
func HybridThreshold(ep Endpoint) int {
	if h, ok := ep.(HybridThresholder); ok {
		if t := h.HybridThreshold(); t >= 0 {
			return t
		}
	}
	return wire.DefaultThreshold
}

// TimelyParams are the delay scales of Timely congestion control on a
// datapath. eRPC's constants (minimum RTT 2 µs, T_low 50 µs) describe an
// RDMA-class fabric; a datapath whose own batching delays a window of
// packets reports larger ones, so that Timely does not take that delay for
// congestion (docs/RPC-NOTES.md, "Delay scales and stalls").
type TimelyParams struct {
	// MinRTT is the round trip of one small packet on an idle path
	// (Timely normalizes RTT gradients by it).
	MinRTT time.Duration
	// TLow is the RTT below which Timely sees no congestion: above the
	// datapath's own batching delay with a full window in flight.
	TLow time.Duration
	// LinkRate is the line rate in bytes/s, Timely's initial and maximum
	// rate (eRPC asks its NIC); 0 when unknown.
	LinkRate float64
	// Uncongested reports a datapath on which no network queue can form
	// (an in-process network): congestion control's automatic mode leaves
	// it off. (udp cannot tell at open time; the RPC layer checks each
	// session's peer for loopback instead.)
	Uncongested bool
}

// BatchedTimely are the delay scales of the datapaths whose event loops
// move a window of packets in one batch per iteration: kernel UDP (one
// sendmmsg and one recvmmsg) and memnet (deliveries inside the endpoints'
// calls). MinRTT is loopback's idle ping-pong; TLow is above the round
// trip of a full window of full-size packets, so that batching alone never
// reads as congestion. The line rate is the datapath's to fill in. The
// measurements behind both: docs/RPC-NOTES.md, "Moved from godoc".
var BatchedTimely = TimelyParams{MinRTT: 10 * time.Microsecond, TLow: 500 * time.Microsecond}

// UnlimitedLinkRate is the line rate reported by a path that has none
// (loopback, an in-process network): 100 Gbit/s, in bytes/s, above what
// such paths carry, so that Timely never caps a session below it
// (docs/RPC-NOTES.md, "Moved from godoc").
const UnlimitedLinkRate = 100e9 / 8

// TimelyTuner is implemented by an Endpoint whose delay scales differ from
// eRPC's (see TimelyParams).
type TimelyTuner interface {
	TimelyParams() TimelyParams
}

// TimelyParamsOf returns ep's Timely parameters, or zero ones when ep does
// not report any (eRPC's values then apply).
func TimelyParamsOf(ep Endpoint) TimelyParams {
	if t, ok := ep.(TimelyTuner); ok {
		return t.TimelyParams()
	}
	return TimelyParams{}
}

// Stats counts what an endpoint did.
type Stats struct {
	TxPackets, TxBytes uint64
	RxPackets, RxBytes uint64
	// Scatter-gather entries sent zero-copy and the bytes they carried.
	ZeroCopyEntries, ZeroCopyBytes uint64
	// Entries and bytes copied into TX buffers (heads, small fields, and
	// entries copied because a packet had too many segments).
	CopiedEntries, CopiedBytes uint64
	// Drops counts packets dropped (full queues, malformed framing).
	Drops uint64
	// Errors counts failed sends and receives.
	Errors uint64
}

// Errors shared by all datapaths. ErrConcurrentUse, ErrClosed and
// ErrTooLarge also match the shared identities of package cornflakes.
var (
	// ErrConcurrentUse is returned when a second goroutine calls an
	// endpoint while another call is in progress.
	ErrConcurrentUse = errs.New("datapath: endpoint used by two goroutines at once", cornflakes.ErrConcurrentUse)
	// ErrClosed is returned by every method of a closed endpoint.
	ErrClosed = errs.New("datapath: endpoint closed", cornflakes.ErrClosed)
	// ErrTooLarge is returned for a packet larger than MaxPayload.
	ErrTooLarge = errs.New("datapath: packet larger than MaxPayload", cornflakes.ErrTooLarge)
	// ErrTooManySegments is returned by SendSegments when segs exceed
	// MaxSegments-1.
	ErrTooManySegments = errors.New("datapath: too many scatter-gather segments")
)

// ErrBadObject is returned by SendObject when an object's Serialize does not
// match its Sizes (more or fewer entries or bytes than declared, or a head
// written to the wrong length). Nothing is sent.
var ErrBadObject = errors.New("datapath: object's Serialize disagrees with its Sizes")

// MaxObjectEntries bounds the zero-copy entries of one object passed to
// SendObject; an object reporting more is refused with ErrBadObject.
const MaxObjectEntries = 1 << 14
