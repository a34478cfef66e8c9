package rpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

func (ep *Endpoint) now() int64 { return int64(time.Since(ep.start)) }

// LoopTime is the clock reading the event loop's current (or last)
// iteration started with (RunOnce, Run, Call), with its monotonic part: a
// caller that runs the loop and accounts its time uses it instead of
// reading the clock again. The zero Time before the first iteration.
func (ep *Endpoint) LoopTime() time.Time {
	if ep.loopNow == 0 {
		return time.Time{}
	}
	return ep.start.Add(time.Duration(ep.loopNow))
}

// RunOnce runs one iteration of the event loop: session management and
// handed-over work, timers (loss detection, rate limiter), one receive batch,
// handlers and continuations, and a transmit flush. Like Run, it returns
// datapath errors only once the datapath is closed (Stats counts the others).
func (ep *Endpoint) RunOnce() error {
	nested, err := ep.enterLoop()
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	_, err = ep.runOnce()
	return err
}

// Run runs the event loop until ctx is done, sleeping in the datapath's
// Wait when idle. It returns ctx.Err(), or the datapath's error once it is
// closed; transient datapath errors are counted in Stats and the loop goes
// on.
//
// On a datapath with Wake (udp, memnet) an idle Run sleeps until its next
// timer (loss scan with requests in flight, rate limiter, session
// handshakes; at most 100 ms): packets, Post, worker answers, session
// management and ctx's cancellation wake it. Otherwise it sleeps at most
// 500 µs (20 µs while worker handlers run) and polls its mailbox.
func (ep *Endpoint) Run(ctx context.Context) error {
	nested, err := ep.enterLoop()
	if err != nil {
		return err
	}
	defer ep.exit(nested)
	defer ep.publishStats() // the final counts, for other goroutines
	spin := ep.cfg.IdleSpin
	if spin == 0 {
		spin = 100 * time.Microsecond
	}
	if ep.waker != nil {
		stop := context.AfterFunc(ctx, ep.wakeUp)
		defer stop()
	}
	lastProgress := ep.now()
	for i := 0; ; i++ {
		if i&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		progress, err := ep.runOnce()
		if err != nil {
			return err
		}
		now := ep.loopNow // one clock read per iteration
		if progress {
			lastProgress = now
			continue
		}
		if now-lastProgress <= int64(spin) {
			continue
		}
		wait := time.Duration(ep.core.NextDeadline() - now)
		if len(ep.smPending) > 0 {
			wait = min(wait, time.Duration(ep.smDeadline()-now))
		}
		if ep.nDeferred > 0 {
			// Packets wait for a busy peer to make room.
			wait = min(wait, deferredPoll)
		}
		switch {
		case ep.waker != nil:
			wait = min(wait, maxIdleWait)
		case ep.atWorkers > 0:
			// Worker answers arrive through the mailbox, which does not
			// wake this datapath's Wait: poll it often.
			wait = min(wait, pollWorkerWait)
		default:
			wait = min(wait, pollIdleWait)
		}
		if wait <= 0 {
			continue
		}
		if ep.waker == nil {
			if err := ep.dp.Wait(wait); err != nil {
				return err
			}
			continue
		}
		ep.sleeping.Store(true)
		if ep.hasMail.Load() || ctx.Err() != nil {
			ep.sleeping.Store(false)
			i = -1 // check ctx at once
			continue
		}
		err = ep.dp.Wait(wait)
		if !ep.sleeping.Swap(false) {
			ep.stats.Wakeups++ // a poster cleared it and called Wake
		}
		if err != nil {
			return err
		}
		i = -1 // a wake-up may be ctx's cancellation: check it at once
	}
}

// smDeadline is the earliest retransmission or deadline of a pending
// session handshake.
func (ep *Endpoint) smDeadline() int64 {
	d := int64(math.MaxInt64)
	for _, num := range ep.smPending {
		if si := ep.session(num); si != nil && si.pendingSM {
			d = min(d, si.nextSM, si.deadline)
		}
	}
	return d
}

func (ep *Endpoint) runOnce() (progress bool, err error) {
	ep.inLoop, ep.batching = true, false // the loop sends what a batch queued
	defer func() { ep.inLoop = false }()
	now := ep.now()
	ep.loopNow = now
	if ep.loopClk != nil {
		// The iteration's one clock read serves the datapath's timers
		// in this iteration's receive and flush too.
		ep.loopClk.SetLoopTime(ep.start.Add(time.Duration(now)))
	}
	if now >= ep.nextPub {
		ep.publishStats()
		ep.nextPub = now + int64(statsPublishEvery)
		if ep.cfg.PoolIdle > 0 && now >= ep.nextTrim {
			ep.nextTrim = now + int64(trimEvery)
			ep.stats.PoolTrimmed += ep.pool.Trim(ep.cfg.PoolIdle)
		}
	}
	if ep.hasMail.Load() {
		ep.drainMail()
		progress = true
	}
	if len(ep.smPending) > 0 {
		ep.smTimers(now)
	}
	if ep.nDeferred > 0 && ep.sendDeferred() {
		progress = true
	}
	// Receive before the timers run (Core.Observe): after a stall longer
	// than the RTO the responses already queued complete their requests
	// instead of being preceded by a spurious rollback and retransmission.
	ep.core.Observe(now)
	if ep.core.HasReady() {
		progress = true
		ep.process()
	}
	// Recv may return packets and an error together: the packets are
	// served (and released) first.
	var n int
	var rerr error
	if ep.segRx != nil {
		n, rerr = ep.recvSegmented()
	} else {
		n, rerr = ep.dp.Recv(ep.rx)
	}
	if n > 0 {
		progress = true
		// The batch's buffers stay in ep.rx until its handlers and
		// continuations ran (borrowed data, Retain by rxID).
		rx := ep.rx[:n]
		for i := range rx {
			switch {
			case ep.segRx != nil && ep.rxIn[i].parts != nil:
				var from netip.AddrPort
				if !ep.cfg.AcceptAnySource {
					from = unmap(rx[i].From)
				}
				ep.core.StepSegmented(from, ep.rxIn[i].parts[0], ep.rxIn[i].tail, i)
			case rx[i].Buf.IsZero():
				// Dropped by recvSegmented (no memory to gather it).
			case ep.cfg.AcceptAnySource:
				ep.core.Step(rx[i].Buf.Bytes(), i)
			default:
				ep.core.StepFrom(unmap(rx[i].From), rx[i].Buf.Bytes(), i)
			}
			if ep.cfg.FlushEvery > 0 && ep.core.Events() >= ep.cfg.FlushEvery && i+1 < n {
				// Handle the messages delivered so far and send their
				// answers while the rest of the batch waits
				// (EndpointConfig.FlushEvery).
				ep.process()
				_ = ep.flush() // counted in Stats; the final flush reports a closed datapath
			}
		}
		ep.process()
		for i := range rx {
			if !rx[i].Buf.IsZero() {
				_ = rx[i].Buf.Release()
			}
			rx[i] = datapath.Packet{}
		}
		if ep.segRx != nil {
			clear(ep.rxIn[:n])
			clear(ep.rxSeg[:n])
		}
	}
	ep.core.Tick(now)
	if ep.core.HasReady() {
		progress = true
		ep.process()
	}
	if rerr != nil {
		ep.stats.RecvErrors++
		if err := ep.datapathErr(rerr); err != nil {
			return progress, err
		}
	}
	return progress, ep.flush()
}

// flush sends what the datapath queued; see datapathErr for its error.
func (ep *Endpoint) flush() error {
	if err := ep.dp.Flush(); err != nil {
		ep.stats.SendErrors++
		return ep.datapathErr(err)
	}
	return nil
}

// datapathErr keeps a datapath error for Stats and returns it if it ends
// the event loop: only a closed datapath does. Everything else is
// transient for the protocol: a send that failed (a full socket buffer, an
// unreachable peer) is a lost packet that it retransmits, a receive that
// failed (no free buffer in the pool) is retried by the next iteration.
// Ending the loop instead would take every session of the endpoint down
// for one peer's or one moment's trouble.
func (ep *Endpoint) datapathErr(err error) error {
	ep.stats.LastDatapathErr = err
	if errors.Is(err, datapath.ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return nil
}

// process sends the core's packets and handles its events until quiet.
func (ep *Endpoint) process() {
	for i := 0; i < 1000 && ep.core.HasReady(); i++ {
		rd := ep.core.Ready()
		for j := range rd.Packets {
			ep.sendPkt(&rd.Packets[j])
		}
		if len(rd.Events) > 0 {
			ep.handleEvents(rd.Events)
		}
		ep.core.Advance(rd)
	}
}

// handleEvents runs the handlers and continuations of evs as one callback
// section (one pair of atomic updates per batch instead of per event).
func (ep *Endpoint) handleEvents(evs []proto.Event) {
	ep.inCallback.Add(1)
	defer ep.inCallback.Add(-1)
	if !ep.nx.recovering.Load() { // no handler to guard (RegisterLoop)
		for j := range evs {
			ep.handleEvent(&evs[j])
		}
		return
	}
	// The flag is left set only by a guarded handler whose panic unwound
	// an unguarded batch (it was registered while the batch ran): cleared
	// here, so that it never arms this batch's guard for another panic.
	ep.guarding = false
	for j := 0; j < len(evs); {
		j = ep.handleEventsFrom(evs, j)
	}
}

// handleEventsFrom handles evs[j:] under one panic guard for the batch,
// for the RegisterLoop handlers given a recovered function: their panic
// (ep.guarding) is recovered here, handed to it (recoverHandler), and
// next is the event after it. Any other panic unwinds as before (the
// guard does not call recover).
func (ep *Endpoint) handleEventsFrom(evs []proto.Event, j int) (next int) {
	defer func() {
		if ep.guarding { // a guarded handler did not return
			if p := recover(); p != nil {
				ep.recoverHandler(p)
				next = j + 1
			} else {
				ep.guarding = false // runtime.Goexit, not a panic
			}
		}
	}()
	for ; j < len(evs); j++ {
		ep.handleEvent(&evs[j])
	}
	return j
}

// ReservedClassMax is the largest pool size class NewEndpoint reserves a
// region of (EndpointConfig.NoReserve): bodies copied into the pool
// (BytesMsg above InlineMax, object heads) and reassembly buffers up to it
// find their memory committed.
const ReservedClassMax = 16 << 10

// reserveClasses grows p by one region (2 MiB) per size class from the
// one of from to ReservedClassMax, and for extra's class: best effort (a
// pool with a lower MaxClass or MaxBytes keeps what fits).
func reserveClasses(p *mem.Pool, from, extra int) {
	size := 1
	for size < from {
		size *= 2
	}
	for ; size <= min(ReservedClassMax, p.MaxSize()); size *= 2 {
		_ = p.Reserve(size, 1)
	}
	if extra > 0 {
		_ = p.Reserve(extra, 1)
	}
}

// SmallCopyMax is the largest data payload of one packet that sendPkt
// copies next to the header instead of sending it as zero-copy
// scatter-gather entries: below it a copy costs less than a clone, a
// completion and a release (Cornflakes' hybrid rule; BenchmarkSmallRPC).
const SmallCopyMax = 256

// packetAppender is the optional in-place send of a datapath (udp's
// AppendPacket): it queues a packet of n bytes and returns its payload to
// fill before the next call on the datapath.
type packetAppender interface {
	AppendPacket(dst netip.AddrPort, n int) ([]byte, error)
}

func (ep *Endpoint) sendPkt(p *proto.OutPacket) {
	if ep.queuedFor(p.Peer) {
		// Behind packets the peer refused: keep the order.
		if !ep.deferPkt(p) {
			ep.stats.SendErrors++ // a lost packet: the protocol recovers
		}
		return
	}
	var err error
	if p.Msg != nil && p.Len <= SmallCopyMax {
		// A small packet costs less to copy than to clone, track and
		// release as scatter-gather entries (Cornflakes copies small
		// fields likewise): header and data go straight into one buffer.
		if ep.appender != nil {
			// Straight into the datapath's TX buffer (no staging copy).
			var b []byte
			if b, err = ep.appender.AppendPacket(p.Peer, proto.HeaderSize+p.Len); err == nil {
				if err = p.Hdr.Encode(b); err == nil && copyData(b[proto.HeaderSize:], p) != p.Len {
					err = ErrBadMessage // cannot happen: the core names ranges inside m
				}
				if err != nil {
					// The packet is already queued: zeroed, its magic is
					// wrong and the peer drops it.
					clear(b)
				}
			}
		} else {
			b := ep.copyBuf[:proto.HeaderSize+p.Len]
			if err = p.Hdr.Encode(b); err == nil {
				if copyData(b[proto.HeaderSize:], p) == p.Len {
					err = ep.dp.Send(p.Peer, b)
				} else {
					err = ErrBadMessage // cannot happen: the core names ranges inside m
				}
			}
		}
		if err != nil && !(isBackpressure(err) && ep.deferPkt(p)) {
			ep.stats.SendErrors++ // a lost packet: the protocol recovers
		}
		return
	}
	if err := p.Hdr.Encode(ep.hdr[:]); err != nil {
		ep.stats.SendErrors++
		return
	}
	if p.Msg == nil {
		err = ep.dp.Send(p.Peer, ep.hdr[:])
	} else {
		m := p.Msg.(*txMsg)
		segs := m.window(ep.segs[:0], p.Off, p.Len)
		if len(segs) <= ep.dp.MaxSegments()-1 {
			if ep.held != nil {
				// The datapath reads m's references until it releases
				// the hold: no clone and release per segment.
				m.dpHolds++
				err = ep.held.SendSegmentsHeld(p.Peer, ep.hdr[:], segs, (*txHold)(m))
			} else {
				err = ep.dp.SendSegments(p.Peer, ep.hdr[:], segs)
			}
		} else {
			// More pieces than scatter-gather entries: copy this packet.
			ep.stats.CopiedPackets++
			b := ep.copyBuf[:proto.HeaderSize+p.Len]
			copy(b, ep.hdr[:])
			o := proto.HeaderSize
			for _, s := range segs {
				o += copy(b[o:], s.Bytes())
			}
			err = ep.dp.Send(p.Peer, b)
		}
		for i := range segs {
			segs[i] = mem.Buf{}
		}
		ep.segs = segs[:0]
	}
	if err != nil && !(isBackpressure(err) && ep.deferPkt(p)) {
		ep.stats.SendErrors++ // a lost packet: the protocol recovers
	}
}

// copyData copies the data of p to dst and returns the bytes copied. Its
// message is ours, or the core's copy of a small response in its slot
// (proto.SlotInline).
func copyData(dst []byte, p *proto.OutPacket) int {
	if m, ok := p.Msg.(*txMsg); ok {
		return m.copyRange(dst, p.Off)
	}
	return copy(dst, p.Msg.Flat()[p.Off:p.Off+p.Len])
}

// The core's slot copies (proto.SlotInline) must take sendPkt's copying
// path, the only one that accepts messages other than txMsg.
var _ [SmallCopyMax - proto.SlotInline]struct{}

func (ep *Endpoint) handleEvent(e *proto.Event) {
	switch e.Kind {
	case proto.EvRequest:
		ep.handleRequest(e)
	case proto.EvResponse:
		ep.handleResponse(e)
	}
}
