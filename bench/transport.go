package bench

import (
	"fmt"
	"strings"
)

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

// TransportMeter is implemented by a Target that can report the counters
// of its transport, cumulative since the target was set up, on the server
// (zero when the server is another process) and on the load generator's
// closed connections. Run samples it before and after a point (the
// connections of a point are all closed before the second sample) and
// reports the differences (Result.ServerTransport, ClientTransport).
type TransportMeter interface {
	TransportUsage() (server, client TransportStats, err error)
}
