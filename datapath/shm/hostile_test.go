package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

var hostileNS = fmt.Sprintf("hostile-%d", os.Getpid())

// fakePeer speaks the handshake by hand and then writes whatever it likes
// into its own region: a hostile or buggy peer.
type fakePeer struct {
	t      *testing.T
	fd     int
	r      *region
	efd    int
	space  []byte // its one "shared space": a sealed memfd it maps read-write
	spFd   int
	victim []byte // the victim's region, mapped read-only
	vg     geometry
	prod   uint64
}

const fakeSpaceSize = 1 << 20

func newFakePeer(t *testing.T, ep *Endpoint, seal bool) *fakePeer {
	t.Helper()
	f := &fakePeer{t: t, efd: -1, spFd: -1}
	t.Cleanup(f.close)
	var err error
	if f.fd, err = newSock(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(f.fd, unixAddr(ep.name)); err != nil {
		t.Fatal(err)
	}
	g := newGeometry(8, 4, 4096)
	rfd, r, err := newRegion(g)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	f.r = r
	if f.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if f.spFd, err = unix.MemfdCreate("fake", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING); err != nil {
		t.Fatal(err)
	}
	if err := unix.Ftruncate(f.spFd, fakeSpaceSize); err != nil {
		t.Fatal(err)
	}
	if seal {
		if _, err := unix.FcntlInt(uintptr(f.spFd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK); err != nil {
			t.Fatal(err)
		}
	}
	if f.space, err = unix.Mmap(f.spFd, 0, fakeSpaceSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		t.Fatal(err)
	}
	h := hello{addr: netip.MustParseAddrPort("127.9.9.9:9"), g: g, regionSize: g.size(), maxPayload: 4096, spaces: []uint64{fakeSpaceSize}}
	if err := sendMsg(f.fd, h.marshal(make([]byte, maxMsg)), []int{rfd, f.efd, f.spFd}); err != nil {
		t.Fatal(err)
	}
	return f
}

// handshake drives ep until the fake peer got the victim's hello.
func (f *fakePeer) handshake(ep *Endpoint) error {
	buf := make([]byte, maxMsg)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ep.poll(0)
		n, fds, err := recvMsg(f.fd, buf, 2+MaxPeerSpaces)
		if err == unix.EAGAIN {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if err != nil {
			return err
		}
		h, err := parseMsg(buf[:n])
		if err != nil {
			closeAll(fds)
			return err
		}
		defer closeAll(fds)
		if f.victim, err = mapPeer(fds[0], h.regionSize); err != nil {
			return err
		}
		f.vg = h.g
		return nil
	}
	return errors.New("no hello from the victim")
}

func (f *fakePeer) close() {
	unmap(f.victim)
	if f.space != nil {
		_ = unix.Munmap(f.space)
	}
	if f.r != nil {
		unmap(f.r.mem)
	}
	for _, fd := range []int{f.fd, f.efd, f.spFd} {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}

// post writes a raw ring entry and a segment table into slot (when it is
// in range) and publishes it.
func (f *fakePeer) post(entry uint64, segs []seg) {
	if slot := uint32(entry); slot < f.r.g.slots {
		table := f.r.slot(slot)[:f.r.g.maxSegs*descSize]
		for i, s := range segs {
			if i < int(f.r.g.maxSegs) {
				putDesc(table, i, s)
			}
		}
	}
	atomic.StoreUint64(f.r.u64(offRings+8*(f.prod&uint64(f.r.g.ringSize-1))), entry)
	f.prod++
	atomic.StoreUint64(f.r.u64(offTxProd), f.prod)
}

// completions the victim posted for the fake's slots.
func (f *fakePeer) completions() []uint32 {
	v := newRegionOf(f.victim, f.vg)
	prod := v.loadComplProd()
	var out []uint32
	for i := uint64(0); i < prod; i++ {
		out = append(out, v.complEntry(i))
	}
	return out
}

func hostileEndpoint(t *testing.T) (*Endpoint, *mem.Pool) {
	t.Helper()
	pool := memtest.NewPool(t)
	ep, err := Open(datapath.Config{Pool: pool, Options: Options{Namespace: hostileNS}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	return ep, pool
}

func drain(t *testing.T, ep *Endpoint) []datapath.Segmented {
	t.Helper()
	pk := make([]datapath.Segmented, 16)
	n, err := ep.RecvSegments(pk)
	if err != nil {
		t.Fatal(err)
	}
	return pk[:n]
}

// TestHostileDescriptors forges ring entries into a connected peer's ring:
// each bad one is dropped and counted, never read out of range, and the
// connection keeps working for good ones.
func TestHostileDescriptors(t *testing.T) {
	ep, _ := hostileEndpoint(t)
	f := newFakePeer(t, ep, true)
	if err := f.handshake(ep); err != nil {
		t.Fatal(err)
	}
	copy(f.space[1000:], "zero-copy")
	copy(f.r.slot(1)[f.r.g.maxSegs*descSize:], "head")
	good := []seg{{space: 0, n: 4}, {space: 1, n: 9, off: 1000}}
	cases := []struct {
		name     string
		entry    uint64
		segs     []seg
		complete bool // the slot comes back
	}{
		{"SlotOutOfRange", 1<<32 | 99, good, false},
		{"TooManySegments", 5<<32 | 2, good, true},
		{"UnknownSpace", 1<<32 | 3, []seg{{space: 7, n: 1}}, true},
		{"RangePastSpace", 1<<32 | 4, []seg{{space: 1, n: 100, off: fakeSpaceSize - 10}}, true},
		{"OffsetOverflow", 1<<32 | 5, []seg{{space: 1, n: 100, off: ^uint64(0) - 50}}, true},
		{"SlotAreaOverrun", 1<<32 | 6, []seg{{space: 0, n: 9000}}, true},
		{"PayloadTooLarge", 2<<32 | 7, []seg{{space: 1, n: 1 << 19}, {space: 1, n: 1 << 19, off: 1 << 19}}, true},
	}
	ep.maxPay = 1 << 19 // below the fake's segments (PayloadTooLarge)
	ep.lim(f)
	for _, c := range cases {
		before := ep.st.BadDescriptors
		f.post(c.entry, c.segs)
		if got := drain(t, ep); len(got) != 0 {
			t.Errorf("%s: delivered %d packets", c.name, len(got))
		}
		if ep.st.BadDescriptors != before+1 {
			t.Errorf("%s: BadDescriptors %d -> %d, want +1", c.name, before, ep.st.BadDescriptors)
		}
	}
	// A good packet, held; the same slot again while held is dropped.
	f.post(2<<32|1, good)
	got := drain(t, ep)
	if len(got) != 1 || string(got[0].AppendTo(nil)) != "headzero-copy" {
		t.Fatalf("good packet: %d packets", len(got))
	}
	f.post(2<<32|1, good)
	if again := drain(t, ep); len(again) != 0 || ep.st.BadDescriptors != uint64(len(cases))+1 {
		t.Errorf("a held slot posted again: delivered %d, BadDescriptors %d", len(again), ep.st.BadDescriptors)
	}
	// The peer rewrites the descriptor after delivery: the packet keeps its
	// validated segments.
	f.post(0, nil) // slot 0, no segments: an empty packet
	if e := drain(t, ep); len(e) != 1 || e[0].Len() != 0 {
		t.Errorf("empty packet: %d packets", len(e))
	} else {
		memtest.Release(t, e[0].Hold)
	}
	memtest.Release(t, got[0].Hold)
	_ = ep.Flush()
	want := map[uint32]int{2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1, 1: 1, 0: 1}
	for _, s := range f.completions() {
		want[s]--
	}
	for s, n := range want {
		if n != 0 {
			t.Errorf("slot %d completed %d times too few", s, n)
		}
	}
	// Forged completions for slots never sent are counted and ignored.
	v := f.r
	for i := range 3 {
		atomic.StoreUint32(v.u32(v.complAt+4*uint64(i)), uint32(i))
	}
	atomic.StoreUint64(v.u64(offComplProd), 3)
	_ = ep.Flush()
	if ep.st.BadCompletions != 3 {
		t.Errorf("BadCompletions = %d, want 3", ep.st.BadCompletions)
	}
	// A ring index that jumps closes the connection.
	atomic.StoreUint64(f.r.u64(offTxProd), f.prod+1000)
	_ = drain(t, ep)
	if ep.st.Violations != 1 {
		t.Errorf("Violations = %d after a ring jump, want 1", ep.st.Violations)
	}
	if st := ep.ShmStats(); st.Peers != 0 {
		t.Errorf("%d peers after the violation, want 0", st.Peers)
	}
}

// lim refreshes the limits of ep's connections after a test changed
// ep.maxPay.
func (ep *Endpoint) lim(f *fakePeer) {
	for _, c := range ep.conns {
		c.lim.maxPayload = uint64(ep.maxPay)
	}
}

// TestHostileHandshake: an unsealed space, or a doorbell that is not an
// eventfd, gets the peer refused and nothing mapped.
func TestHostileHandshake(t *testing.T) {
	ep, _ := hostileEndpoint(t)
	f := newFakePeer(t, ep, false)
	err := f.handshake(ep)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("unsealed space: handshake %v, want ErrRefused", err)
	}
	if ep.st.Refused != 1 || len(ep.conns) > 0 && ep.conns[0].state != connDead {
		t.Errorf("Refused = %d, want 1 and no live connection", ep.st.Refused)
	}
}

// TestRefusedUID: an endpoint that allows another uid only refuses to
// dial, and refuses accepted peers, before anything is shared.
func TestRefusedUID(t *testing.T) {
	other := uint32(os.Getuid()) + 4242
	srv, err := Open(datapath.Config{Options: Options{Namespace: hostileNS, AllowUIDs: []uint32{other}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := Open(datapath.Config{Options: Options{Namespace: hostileNS}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// The strict side dials: it checks the listener first.
	if err := srv.Send(cli.LocalAddr(), []byte("x")); !errors.Is(err, ErrRefused) {
		t.Errorf("dialing a disallowed uid: %v, want ErrRefused", err)
	}
	// The strict side accepts: the client gets the refusal.
	if err := cli.Send(srv.LocalAddr(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_ = srv.Wait(time.Millisecond)
		_ = cli.Wait(time.Millisecond)
		err := cli.Send(srv.LocalAddr(), []byte("y"))
		if errors.Is(err, ErrRefused) {
			break
		}
		if time.Now().After(deadline) {
			for _, c := range cli.conns {
				t.Logf("cli conn %v state %d err %v", c.peer, c.state, c.err)
			}
			t.Logf("srv %+v cli %+v", srv.ShmStats(), cli.ShmStats())
			t.Fatalf("client never saw the refusal (last send: %v)", err)
		}
		_ = cli.Flush()
	}
	if srv.st.Refused < 2 {
		t.Errorf("server Refused = %d, want >= 2", srv.st.Refused)
	}
}

// TestStalledPeer: a peer that never completes holds at most Slots packets;
// further sends fail with ErrBusy instead of blocking, and closing the
// endpoint releases every reference.
func TestStalledPeer(t *testing.T) {
	space, err := mem.NewSpace(mem.SpaceConfig{Size: 64 << 20, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer space.Close()
	app := memtest.NewPool(t, mem.PoolConfig{Space: space})
	ep, err := Open(datapath.Config{Pool: memtest.NewPool(t), Options: Options{Namespace: hostileNS, Slots: 4, Spaces: []*mem.Space{space}}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakePeer(t, ep, true)
	if err := f.handshake(ep); err != nil {
		t.Fatal(err)
	}
	seg := memtest.Alloc(t, app, make([]byte, 4096))
	for i := range 4 {
		if err := ep.SendSegments(netip.MustParseAddrPort("127.9.9.9:9"), []byte{byte(i)}, []mem.Buf{seg}); err != nil {
			t.Fatal(err)
		}
	}
	_ = ep.Flush()
	if err := ep.SendSegments(netip.MustParseAddrPort("127.9.9.9:9"), nil, []mem.Buf{seg}); !errors.Is(err, ErrBusy) {
		t.Errorf("fifth send to a stalled peer: %v, want ErrBusy", err)
	}
	if seg.Refs() != 5 {
		t.Errorf("segment has %d references, want 5 (4 in flight)", seg.Refs())
	}
	// The descriptors the victim wrote are readable by the peer.
	v := newRegionOf(f.victim, f.vg)
	if p := v.loadTxProd(); p != 4 {
		t.Errorf("victim published %d descriptors, want 4", p)
	}
	e := v.descEntry(0)
	table := v.slot(uint32(e))[:v.g.maxSegs*descSize]
	if sp := binary.LittleEndian.Uint32(table[descSize:]); sp != 1 {
		t.Errorf("second segment in space %d, want 1 (zero-copy)", sp)
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	if seg.Refs() != 1 {
		t.Errorf("after Close the segment has %d references, want 1", seg.Refs())
	}
	memtest.Release(t, seg)
}

// TestHostileCompletionIndex: a completion index that jumps past the ring
// closes the connection.
func TestHostileCompletionIndex(t *testing.T) {
	ep, _ := hostileEndpoint(t)
	f := newFakePeer(t, ep, true)
	if err := f.handshake(ep); err != nil {
		t.Fatal(err)
	}
	if len(ep.conns) != 1 {
		t.Fatalf("%d connections after the handshake", len(ep.conns))
	}
	atomic.StoreUint64(f.r.u64(offComplProd), complRing+1)
	_ = ep.Flush()
	if ep.st.Violations != 1 {
		t.Errorf("Violations = %d after a completion index jump, want 1", ep.st.Violations)
	}
	if st := ep.ShmStats(); st.Peers != 0 {
		t.Errorf("%d peers after the violation, want 0", st.Peers)
	}
}

// TestHostileBatchTouch: forged entries between good ones, received in one
// batch with Options.TouchSegments: the bad ones are dropped and counted
// before anything is touched, and the touch reads only the good packets'
// validated segments.
func TestHostileBatchTouch(t *testing.T) {
	defer func(old bool) { prefetchRx = old }(prefetchRx)
	prefetchRx = false // Touched counts touchSegments only
	ep, _ := hostileEndpoint(t)
	ep.opts.TouchSegments = true
	f := newFakePeer(t, ep, true)
	if err := f.handshake(ep); err != nil {
		t.Fatal(err)
	}
	copy(f.space[1000:], "zero-copy")
	for _, s := range []uint32{1, 2} {
		copy(f.r.slot(s)[f.r.g.maxSegs*descSize:], "head")
	}
	good := []seg{{space: 0, n: 4}, {space: 1, n: 9, off: 1000}}
	f.post(2<<32|1, good)
	f.post(1<<32|3, []seg{{space: 7, n: 1}})                            // unknown space
	f.post(1<<32|4, []seg{{space: 1, n: 100, off: fakeSpaceSize - 10}}) // past the space
	f.post(1<<32|5, []seg{{space: 1, n: 100, off: ^uint64(0) - 50}})    // offset overflow
	f.post(1<<32|99, good)                                              // slot out of range
	f.post(2<<32|2, good)
	before := ep.Touched()
	got := drain(t, ep)
	if len(got) != 2 || ep.st.BadDescriptors != 4 {
		t.Fatalf("delivered %d packets, BadDescriptors %d; want 2 and 4", len(got), ep.st.BadDescriptors)
	}
	var want byte
	for _, p := range got {
		if string(p.AppendTo(nil)) != "headzero-copy" {
			t.Fatalf("packet %q", p.AppendTo(nil))
		}
		v := p.Segs[len(p.Segs)-1]
		want += v[0] + v[len(v)/2] + v[len(v)-1]
	}
	if d := ep.Touched() - before; d != want {
		t.Errorf("touched sum %d, want %d (the good packets' value segments)", d, want)
	}
	for _, p := range got {
		memtest.Release(t, p.Hold)
	}
}
