package rpc

import (
	"errors"
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// Backpressure from the datapath.
//
// A send that a datapath refuses because the peer has not yet made room
// (shm's ErrBusy: the peer holds every TX slot until it consumes or
// releases what it received) lost nothing: the peer is behind, and the
// datapath is lossless. Treating it as a lost packet, as a full socket
// buffer on a lossy network is, would cost an RTO and a go-back-N
// rollback per refusal, and the packets sent after it would arrive out of
// order and be dropped. Instead the endpoint copies the refused packet
// into a buffer of its pool and queues it for that peer; every later
// packet to the peer queues behind it (order is kept per peer), and each
// loop turn sends the queues in order until the datapath refuses again.
// Other peers are not held up.

// backpressure is implemented by datapath errors meaning "no room now,
// nothing was sent, send again later" (shm.ErrBusy).
type backpressure interface{ Backpressure() bool }

func isBackpressure(err error) bool {
	var bp backpressure
	return errors.As(err, &bp) && bp.Backpressure()
}

// MaxDeferred bounds the packets an endpoint keeps for peers that refused
// them (Stats.Deferred); beyond it a refused packet counts as lost and the
// protocol's retransmission recovers it.
const MaxDeferred = 4096

// deferredPoll is the longest an idle Run sleeps while packets wait for
// a busy peer (the peer's completion normally wakes it before).
const deferredPoll = 100 * time.Microsecond

// deferPkt queues a copy of p (header and data) behind the other packets
// deferred for its peer. It reports false when the packet cannot be kept
// (MaxDeferred reached, no buffer): it is then lost.
func (ep *Endpoint) deferPkt(p *proto.OutPacket) bool {
	if ep.nDeferred >= MaxDeferred {
		return false
	}
	n := proto.HeaderSize + p.Len
	if p.Msg == nil {
		n = proto.HeaderSize
	}
	b, err := ep.pool.Alloc(n)
	if err != nil {
		return false
	}
	b = b.Slice(0, n)
	d := b.Bytes()
	if err := p.Hdr.Encode(d); err != nil || (p.Msg != nil && copyData(d[proto.HeaderSize:], p) != p.Len) {
		_ = b.Release()
		return false
	}
	if ep.deferred == nil {
		ep.deferred = make(map[netip.AddrPort][]mem.Buf)
	}
	ep.deferred[p.Peer] = append(ep.deferred[p.Peer], b)
	ep.nDeferred++
	ep.stats.Deferred++
	return true
}

// queuedFor reports whether packets wait for peer (a new packet to it
// must queue behind them).
func (ep *Endpoint) queuedFor(peer netip.AddrPort) bool {
	if ep.nDeferred == 0 {
		return false
	}
	_, ok := ep.deferred[peer]
	return ok
}

// sendDeferred sends the deferred packets of every peer in order, until
// the datapath refuses one of a peer's again. It reports whether it sent
// any. A packet refused for another reason is dropped (a lost packet).
func (ep *Endpoint) sendDeferred() bool {
	sent := false
	for peer, q := range ep.deferred {
		i := 0
		for ; i < len(q); i++ {
			err := ep.dp.Send(peer, q[i].Bytes())
			if err != nil && isBackpressure(err) {
				break
			}
			if err != nil {
				ep.stats.SendErrors++ // a lost packet: the protocol recovers
				ep.stats.LastDatapathErr = err
			}
			_ = q[i].Release()
			q[i] = mem.Buf{}
			sent = true
		}
		ep.nDeferred -= i
		if i == len(q) {
			delete(ep.deferred, peer)
		} else if i > 0 {
			ep.deferred[peer] = append(q[:0], q[i:]...)
		}
	}
	return sent
}

// dropDeferred releases every deferred packet (Close).
func (ep *Endpoint) dropDeferred() {
	for peer, q := range ep.deferred {
		for i := range q {
			_ = q[i].Release()
		}
		delete(ep.deferred, peer)
	}
	ep.nDeferred = 0
}

// lossless is implemented by datapaths that never lose a packet they
// accepted (shm: a ring in shared memory; a refused send is backpressure).
type lossless interface{ Lossless() bool }

func isLossless(dp any) bool {
	l, ok := dp.(lossless)
	return ok && l.Lossless()
}

// LosslessRTO is the retransmission timeout of an endpoint whose datapath
// is lossless (EndpointConfig.RTO unset): nothing is lost there but to a
// peer that failed or restarted, so an RTO fires only spuriously, after a
// scheduling stall longer than it, and each costs a go-back-N rollback,
// duplicates the peer drops as out of order, and a full ring. eRPC's
// DefaultRTO (5 ms) is shorter than the stalls of a shared machine.
const LosslessRTO = 200 * time.Millisecond
