package proto

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
)

// testMsg is a Msg whose bytes follow a pattern derived from seed, so the
// receiver can check integrity. It counts releases.
type testMsg struct {
	b        []byte
	released *int
	freed    bool
}

func (m *testMsg) Len() int { return len(m.b) }

// Flat gives the bytes, so that small responses take the core's slot copy
// (SlotInline) as the endpoint's do.
func (m *testMsg) Flat() []byte { return m.b }
func (m *testMsg) Release() {
	if m.freed {
		panic("double release of test message")
	}
	m.freed = true
	*m.released++
}

func pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + uint64(i)*7 + uint64(i>>8))
	}
	return b
}

// testAlloc hands out reassembly buffers and counts them.
type testAlloc struct {
	live      int
	liveBytes int
	fail      bool
}

type testRx struct {
	b     []byte
	a     *testAlloc
	freed bool
}

func (r *testRx) Bytes() []byte { return r.b }
func (r *testRx) Release() {
	if r.freed {
		panic("double release of rx buffer")
	}
	r.freed = true
	r.a.live--
	r.a.liveBytes -= len(r.b)
}

func (a *testAlloc) AllocRx(n int) (RxBuf, error) {
	if a.fail {
		return nil, ErrNoMemory
	}
	a.live++
	a.liveBytes += n
	return &testRx{b: make([]byte, n), a: a}, nil
}

var (
	cliAddr = netip.MustParseAddrPort("10.0.0.1:1")
	srvAddr = netip.MustParseAddrPort("10.0.0.2:2")
)

type wirePkt struct {
	b   []byte
	hdr Header
}

// world is a client core and a server core with one session between them
// and explicit in-flight queues, so tests decide what is delivered, dropped,
// duplicated or reordered.
type world struct {
	t        testing.TB
	cli, srv *Core
	ca, sa   testAlloc
	c2s, s2c []wirePkt
	msgs     int            // test messages created
	released int            // test messages released
	pending  []Event        // server requests waiting for respond
	handled  map[uint64]int // handler invocations per request tag (from data)
	done     map[uint64]int // completions per tag
	log      strings.Builder
	nextTag  uint64
	now      int64
	reqSizes map[uint64]int
	respSize map[uint64]int
	badData  int
}

func newWorld(t testing.TB, cfg Config) *world { return newWorldSession(t, cfg, SessionConfig{}) }

// newWorldSession is newWorld with the client session's options from sc
// (NoCC); its numbers and peer are the world's.
func newWorldSession(t testing.TB, cfg Config, sc SessionConfig) *world {
	w := &world{t: t, handled: map[uint64]int{}, done: map[uint64]int{}, reqSizes: map[uint64]int{}, respSize: map[uint64]int{}}
	var err error
	if w.cli, err = New(cfg, &w.ca); err != nil {
		t.Fatal(err)
	}
	if w.srv, err = New(cfg, &w.sa); err != nil {
		t.Fatal(err)
	}
	sc.Num, sc.Client, sc.Remote, sc.Peer = 0, true, 5, srvAddr
	if err := w.cli.AddSession(sc); err != nil {
		t.Fatal(err)
	}
	if err := w.srv.AddSession(SessionConfig{Num: 5, Client: false, Remote: 0, Peer: cliAddr}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) logf(format string, args ...any) { fmt.Fprintf(&w.log, format+"\n", args...) }

func (w *world) newMsg(seed uint64, n int) *testMsg {
	w.msgs++
	return &testMsg{b: pattern(seed, n), released: &w.released}
}

// enqueue starts a request of size n whose tag encodes its identity; the
// request bytes start with the tag so the server knows which one it got.
func (w *world) enqueue(n, respSize int) uint64 {
	w.nextTag++
	tag := w.nextTag
	m := w.newMsg(tag, n)
	w.reqSizes[tag] = n
	w.respSize[tag] = respSize
	if err := w.cli.Enqueue(0, 1, m, tag); err != nil {
		w.t.Fatalf("enqueue: %v", err)
	}
	w.flush()
	return tag
}

func encodePkt(p *OutPacket) []byte {
	b := make([]byte, HeaderSize+p.Len)
	if err := p.Hdr.Encode(b); err != nil {
		panic(err)
	}
	if p.Msg != nil {
		copy(b[HeaderSize:], p.Msg.Flat()[p.Off:p.Off+p.Len])
	}
	return b
}

// flush drains both cores' Ready until quiescent, moving packets to the
// in-flight queues and handling events.
func (w *world) flush() {
	for i := 0; i < 100 && (w.cli.HasReady() || w.srv.HasReady()); i++ {
		for _, side := range []struct {
			c    *Core
			name string
			q    *[]wirePkt
		}{{w.cli, "c", &w.c2s}, {w.srv, "s", &w.s2c}} {
			rd := side.c.Ready()
			for i := range rd.Packets {
				p := &rd.Packets[i]
				*side.q = append(*side.q, wirePkt{b: encodePkt(p), hdr: p.Hdr})
				w.logf("%s tx %s", side.name, fmtHdr(p.Hdr))
			}
			for _, e := range rd.Events {
				w.handleEvent(side.name, e)
			}
			side.c.Advance(rd)
		}
	}
}

func fmtHdr(h Header) string {
	s := fmt.Sprintf("%-4s req=%d pkt=%d size=%d", h.Type, h.ReqNum, h.PktNum, h.MsgSize)
	if h.Status != StatusOK {
		s += fmt.Sprintf(" status=%d", h.Status)
	}
	return s
}

func (w *world) handleEvent(side string, e Event) {
	switch e.Kind {
	case EvRequest:
		tag := uint64(0)
		if len(e.Data) > 0 {
			// Identify the request by matching its pattern.
			for t, n := range w.reqSizes {
				if n == len(e.Data) && string(pattern(t, n)) == string(e.Data) {
					tag = t
				}
			}
			if tag == 0 {
				w.badData++
			}
		}
		w.handled[tag]++
		w.logf("s handler req=%d size=%d buf=%v", e.Handle.ReqNum, len(e.Data), e.Buf != nil)
		if e.Buf != nil {
			e.Buf.Release() // handlers copy what they need in these tests
		}
		e.Data = nil
		e.Buf = nil
		e.Tag = tag
		w.pending = append(w.pending, e)
	case EvResponse:
		if e.Err != nil {
			w.logf("c done tag=%d err=%v", e.Tag, e.Err)
		} else if e.Status != StatusOK {
			w.logf("c done tag=%d status=%d", e.Tag, e.Status)
		} else {
			ok := string(e.Data) == string(pattern(e.Tag+1000, w.respSize[e.Tag]))
			if !ok {
				w.badData++
			}
			w.logf("c done tag=%d size=%d ok=%v", e.Tag, len(e.Data), ok)
		}
		w.done[e.Tag]++
		if e.Buf != nil {
			e.Buf.Release()
		}
	}
}

// respond answers the oldest pending request.
func (w *world) respond() {
	if len(w.pending) == 0 {
		w.t.Fatal("respond: no pending request")
	}
	e := w.pending[0]
	w.pending = w.pending[1:]
	n := w.respSize[e.Tag]
	if err := w.srv.Respond(e.Handle, w.newMsg(e.Tag+1000, n)); err != nil {
		w.logf("s respond error: %v", err)
		w.released++ // we keep ownership; count it as gone
	}
	w.flush()
}

// deliverRequest delivers every queued client packet to the server, which
// must then hold exactly one request for its handler.
func (w *world) deliverRequest() {
	w.t.Helper()
	w.deliver("c2s", all(len(w.c2s)))
	if len(w.pending) != 1 {
		w.t.Fatalf("%d requests delivered, want 1", len(w.pending))
	}
}

// deliver moves packets idx (in that order) of queue dir to the other side.
func (w *world) deliver(dir string, idx []int) {
	q := &w.c2s
	dst := w.srv
	if dir == "s2c" {
		q, dst = &w.s2c, w.cli
	}
	var pkts []wirePkt
	take := map[int]bool{}
	for _, i := range idx {
		if i < len(*q) {
			pkts = append(pkts, (*q)[i])
			take[i] = true
		}
	}
	var rest []wirePkt
	for i, p := range *q {
		if !take[i] {
			rest = append(rest, p)
		}
	}
	*q = rest
	for i, p := range pkts {
		dst.Step(p.b, i)
	}
	w.flush()
}

func (w *world) drop(dir string, idx []int) {
	q := &w.c2s
	if dir == "s2c" {
		q = &w.s2c
	}
	drop := map[int]bool{}
	for _, i := range idx {
		drop[i] = true
	}
	var rest []wirePkt
	for i, p := range *q {
		if !drop[i] {
			rest = append(rest, p)
		}
	}
	*q = rest
}

func all(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// exchange delivers everything in flight in both directions (answering
// requests as they arrive) until quiet or maxRounds; lossy decides per packet
// whether it is dropped.
func (w *world) exchange(maxRounds int, lossy func() bool) {
	for r := 0; r < maxRounds && (len(w.c2s) > 0 || len(w.s2c) > 0 || len(w.pending) > 0); r++ {
		for len(w.pending) > 0 {
			w.respond()
		}
		for _, dst := range []*Core{w.srv, w.cli} {
			q := &w.c2s
			if dst == w.cli {
				q = &w.s2c
			}
			pkts := *q
			*q = nil
			for i, p := range pkts {
				if lossy != nil && lossy() {
					continue
				}
				dst.Step(p.b, i)
			}
			w.flush()
			w.checkInvariants()
		}
	}
}

func (w *world) tick(d int64) {
	w.now += d
	w.cli.Tick(w.now)
	w.srv.Tick(w.now)
	w.flush()
}

func (w *world) state() string {
	var b strings.Builder
	s := w.cli.session(0)
	if s == nil {
		return "client session removed"
	}
	fmt.Fprintf(&b, "client credits=%d backlog=%d\n", s.credits, len(s.backlog)-s.blHead)
	for i := 0; i < s.numSlots(); i++ {
		sl := s.slotIf(i)
		if sl.req != nil {
			fmt.Fprintf(&b, "  slot %d req=%d R=%d S=%d tx=%d rx=%d sack=%b\n", i, sl.reqNum, sl.reqPkts, sl.respPkts, sl.numTx, sl.numRx, sl.sack)
		}
	}
	ss := w.srv.session(5)
	if ss == nil {
		return b.String() + "server session removed"
	}
	states := []string{"idle", "receiving", "in-handler", "responded"}
	var lines []string
	for i := 0; i < ss.numSlots(); i++ {
		sl := ss.slotIf(i)
		if sl.srv != srvIdle {
			lines = append(lines, fmt.Sprintf("  slot %d req=%d %s rx=%d/%d", i, sl.reqNum, states[sl.srv], sl.numRx, sl.reqPkts))
		}
	}
	sort.Strings(lines)
	fmt.Fprintf(&b, "server\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "in flight c2s=%d s2c=%d", len(w.c2s), len(w.s2c))
	return b.String()
}

// checkInvariants verifies credit conservation on the client.
func (w *world) checkInvariants() {
	s := w.cli.session(0)
	if s == nil {
		return
	}
	total := s.credits
	for i := 0; i < s.numSlots(); i++ {
		if sl := s.slotIf(i); sl.req != nil {
			total += outstanding(sl)
		}
	}
	if total != w.cli.cfg.Credits {
		w.t.Fatalf("credit conservation broken: %d != %d\n%s", total, w.cli.cfg.Credits, w.state())
	}
}

// closeAll removes both sessions and checks that every message and buffer
// came back.
func (w *world) closeAll() {
	w.flush()
	for _, e := range w.pending {
		_ = e
	}
	w.pending = nil
	_ = w.cli.RemoveSession(0, nil)
	_ = w.srv.RemoveSession(5, nil)
	w.flush()
	if w.released != w.msgs {
		w.t.Errorf("messages: %d created, %d released", w.msgs, w.released)
	}
	if w.ca.live != 0 || w.sa.live != 0 {
		w.t.Errorf("rx buffers live: client %d server %d", w.ca.live, w.sa.live)
	}
	for tag, n := range w.handled {
		if n > 1 {
			w.t.Errorf("request %d handled %d times", tag, n)
		}
	}
	if w.badData != 0 {
		w.t.Errorf("%d messages with corrupted data", w.badData)
	}
}
