// Package loadgen is the load generator's connection contract (Conn,
// Target, request ids and slots, ErrBusy) and its transport counters
// (TransportStats), without the generator: package bench aliases every
// name here, and a server package's load client (kv's) implements the
// contract without linking the generator, its histograms or its plots.
package loadgen

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cornflakes-go/cornflakes/workload"
)

// Conn is one client's connection to the server under test. It is used by
// exactly one goroutine.
//
// Request ids are unique among in-flight requests, and SlotOf(id) is a dense
// index in [0, MaxOutstanding) (or [0, Outstanding) in closed loop) that no
// other in-flight request shares, so an implementation can keep per-request
// state, e.g. a preallocated RPC continuation per slot, in a fixed array
// instead of a map. Over an asynchronous RPC API (Enqueue with a
// continuation), Send serializes and enqueues; Poll runs the endpoint's event
// loop once, and the continuations, which run inside it on the same
// goroutine, call deliver.
type Conn interface {
	// Send issues req under id without waiting for the response. req (and
	// the memory its Keys and Values alias) stays valid and unmodified until
	// the response for id is delivered, so an implementation may serialize
	// lazily. An error wrapping ErrBusy means "no room now" (e.g. no free
	// session slot or credit): the generator polls and retries the same
	// request later, its latency still counted from the intended time. Any
	// other error means the request was not issued (it is counted as an error
	// and never delivered).
	Send(id uint64, req *workload.Request) error
	// Poll delivers the responses that have completed, calling deliver once
	// per response, and returns how many it delivered. resp and the memory
	// its Values alias are borrowed for the duration of the call only.
	// A failed request is delivered with Status StatusError. Poll must not
	// block for long: the generator calls it while waiting for send times.
	Poll(deliver func(id uint64, resp *workload.Response)) (int, error)
	// Close releases the connection; responses not yet delivered are lost.
	Close() error
}

// Waiter is implemented by a Conn that can block until a response may have
// arrived (e.g. in the datapath's poll). When the next send is more than
// 2*WaitMargin away and requests are in flight, the generator (unless
// Config.Spin) calls Wait with a timeout ending WaitMargin before the send
// instead of yielding in a loop, so on a small machine an idle client
// leaves the core to the server. Wait should time out with sub-millisecond
// precision (the UDP and XDP datapaths use ppoll); it may return early; it
// must return at once when nothing is in flight.
type Waiter interface {
	Wait(timeout time.Duration) error
}

// Batcher is implemented by a Conn that sends several requests more cheaply
// together than one by one. The generator calls BeginSends before a run of Send
// calls (between two polls) and EndSends after it; the requests may leave at
// EndSends rather than at their Send. An error from either is the Conn's failure
// (as Poll's).
type Batcher interface {
	BeginSends() error
	EndSends() error
}

// Target opens one Conn per client goroutine.
type Target interface {
	Dial(client int) (Conn, error)
}

// TargetFunc adapts a function to Target.
type TargetFunc func(client int) (Conn, error)

// Dial calls f. A failed dial returns a nil Conn, even when f returned its
// connection type's nil pointer (a non-nil interface) with the error.
func (f TargetFunc) Dial(client int) (Conn, error) {
	c, err := f(client)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ErrBusy is returned (wrapped) by Conn.Send when the transport cannot
// take a request right now; the generator retries it after polling.
var ErrBusy = errors.New("bench: transport busy")

// IDShift is where the sequence number starts in a request id; the bits
// below hold the slot index.
const IDShift = 21

// SlotOf returns the in-flight slot index of a request id (see Conn).
func SlotOf(id uint64) int { return int(id & (1<<IDShift - 1)) }

// TransportStats are the counters of one side (server or load generator)
// of the transport under test: the RPC layer's and the datapath's. They
// tell whether a rate or a tail was lost to the transport (refused sends,
// retransmissions, out-of-order drops) rather than spent serving. Counters
// are cumulative in a TransportMeter's answer and per point in a Result;
// the gauges (TxInFlight, RxHeld) are as of the end of the point.
type TransportStats struct {
	// RPC layer (rpc.Stats): datapath send errors the protocol counted
	// as lost packets, packets re-sent (RTO rollback or fast
	// retransmission), RTO rollbacks, out-of-order or duplicate packets
	// dropped, and packets the datapath refused for want of room that
	// the endpoint queued and sent later (backpressure).
	SendErrors  uint64 `json:"send_errors"`
	Retransmits uint64 `json:"retransmits"`
	RTOs        uint64 `json:"rtos"`
	DropOrder   uint64 `json:"drop_order"`
	Deferred    uint64 `json:"deferred,omitempty"`
	// Datapath (datapath.Stats and, on shm, shm.Stats): packets sent and
	// received, bytes sent zero-copy and copied, bytes the receiver
	// copied out of the sender's memory and handed over in place, sends
	// refused because the peer held every TX slot (Busy), zero-copy
	// entries copied because the peer held its budget, and drops.
	TxPackets       uint64 `json:"tx_packets"`
	RxPackets       uint64 `json:"rx_packets"`
	ZeroCopyBytes   uint64 `json:"zero_copy_bytes"`
	CopiedBytes     uint64 `json:"copied_bytes"`
	RxCopiedBytes   uint64 `json:"rx_copied_bytes,omitempty"`
	RxZeroCopyBytes uint64 `json:"rx_zero_copy_bytes,omitempty"`
	// RPC receive in place (rpc.Stats): responses whose zero-copy values
	// the receiver read in the sender's memory, and packets with such
	// segments it gathered into one buffer instead (requests, parts of
	// large messages, or a codec that reads contiguous bytes).
	RxInPlace         uint64 `json:"rx_in_place,omitempty"`
	RxGathered        uint64 `json:"rx_gathered,omitempty"`
	Busy              uint64 `json:"busy"`
	ZeroCopyFallbacks uint64 `json:"zero_copy_fallbacks"`
	Drops             uint64 `json:"drops"`
	// Gauges (shm): TX slots in flight (posted, not completed by the
	// peer) and peer slots held for packets not yet released.
	TxInFlight int `json:"tx_in_flight"`
	RxHeld     int `json:"rx_held"`
}

// Sub returns the counters of t minus those of before (the gauges are
// t's).
func (t TransportStats) Sub(before TransportStats) TransportStats {
	d := t
	d.SendErrors -= before.SendErrors
	d.Retransmits -= before.Retransmits
	d.RTOs -= before.RTOs
	d.DropOrder -= before.DropOrder
	d.Deferred -= before.Deferred
	d.TxPackets -= before.TxPackets
	d.RxPackets -= before.RxPackets
	d.ZeroCopyBytes -= before.ZeroCopyBytes
	d.CopiedBytes -= before.CopiedBytes
	d.RxCopiedBytes -= before.RxCopiedBytes
	d.RxZeroCopyBytes -= before.RxZeroCopyBytes
	d.RxInPlace -= before.RxInPlace
	d.RxGathered -= before.RxGathered
	d.Busy -= before.Busy
	d.ZeroCopyFallbacks -= before.ZeroCopyFallbacks
	d.Drops -= before.Drops
	return d
}

// Add adds the counters and gauges of o to t.
func (t *TransportStats) Add(o TransportStats) {
	t.SendErrors += o.SendErrors
	t.Retransmits += o.Retransmits
	t.RTOs += o.RTOs
	t.DropOrder += o.DropOrder
	t.Deferred += o.Deferred
	t.TxPackets += o.TxPackets
	t.RxPackets += o.RxPackets
	t.ZeroCopyBytes += o.ZeroCopyBytes
	t.CopiedBytes += o.CopiedBytes
	t.RxCopiedBytes += o.RxCopiedBytes
	t.RxZeroCopyBytes += o.RxZeroCopyBytes
	t.RxInPlace += o.RxInPlace
	t.RxGathered += o.RxGathered
	t.Busy += o.Busy
	t.ZeroCopyFallbacks += o.ZeroCopyFallbacks
	t.Drops += o.Drops
	t.TxInFlight += o.TxInFlight
	t.RxHeld += o.RxHeld
}

// Troubled reports whether the transport lost or refused anything: a send
// error, a retransmission, an out-of-order drop, a refused send, a
// zero-copy fallback or a datapath drop.
func (t TransportStats) Troubled() bool {
	return t.SendErrors|t.Retransmits|t.DropOrder|t.Busy|t.ZeroCopyFallbacks|t.Drops != 0
}

// String is the one-line summary of the exit lines: "send errors 0,
// retransmits 0, ...".
func (t TransportStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "send errors %d, retransmits %d (RTOs %d), out-of-order drops %d, deferred %d, busy %d, zero-copy fallbacks %d, drops %d, tx in flight %d, rx held %d",
		t.SendErrors, t.Retransmits, t.RTOs, t.DropOrder, t.Deferred, t.Busy, t.ZeroCopyFallbacks, t.Drops, t.TxInFlight, t.RxHeld)
	return b.String()
}
