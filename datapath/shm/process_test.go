package shm_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

func randAddr() netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(20000+rand.IntN(20000)))
}

// openTest opens an endpoint whose pool and app pool the test checks, with
// the package's shared space registered.
func openTest(t *testing.T, local netip.AddrPort) (*shm.Endpoint, *mem.Pool) {
	t.Helper()
	space := testSpace(t)
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app " + t.Name(), Space: space})
	pool := memtest.NewPool(t, mem.PoolConfig{Name: "ep " + t.Name()})
	ep, err := shm.Open(datapath.Config{Local: local, Pool: pool, Options: shm.Options{Namespace: testNS, Spaces: []*mem.Space{space}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ep.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ep, app
}

// recvSegs receives one segmented packet within 10 s.
func recvSegs(t *testing.T, ep *shm.Endpoint) datapath.Segmented {
	t.Helper()
	pk := make([]datapath.Segmented, 1)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := ep.RecvSegments(pk)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return pk[0]
		}
		if err := ep.Wait(5 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("no packet within 10s")
	return datapath.Segmented{}
}

// sendObj sends a ListBuffers of vals (zero-copy from app) after tag.
func sendObj(t *testing.T, ep *shm.Endpoint, app *mem.Pool, dst netip.AddrPort, tag byte, vals [][]byte) {
	t.Helper()
	a := wire.NewArena()
	a.Threshold = 512
	m := cf.NewListBuffers(a)
	l := m.InitMessages(len(vals))
	for _, v := range vals {
		b := memtest.Alloc(t, app, v)
		l.AppendBuf(b)
		memtest.Release(t, b) // the arena holds its own reference
	}
	if err := ep.SendObject(dst, []byte{tag}, m); err != nil {
		t.Fatal(err)
	}
	if err := a.Reset(); err != nil { // the datapath holds its own references
		t.Fatal(err)
	}
	if err := ep.Flush(); err != nil {
		t.Fatal(err)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*13) + byte(i>>8)
	}
	return b
}

// TestTwoProcesses: raw packets and zero-copy objects to an echo server in
// another process (the test binary re-executed) and back; objects are
// decoded in place on both sides.
func TestTwoProcesses(t *testing.T) {
	srv := randAddr()
	_, _ = child(t, "echo", srv.String())
	ep, app := openTest(t, netip.AddrPort{})
	for i, n := range []int{0, 1, 100, 5000, 100000} {
		p := pattern(n, byte(i))
		if err := ep.Send(srv, append([]byte{'R'}, p...)); err != nil {
			t.Fatal(err)
		}
		if err := ep.Flush(); err != nil {
			t.Fatal(err)
		}
		got := recvSegs(t, ep)
		if got.From != srv || !bytes.Equal(got.AppendTo(nil), append([]byte{'R'}, p...)) {
			t.Errorf("raw %d bytes: got %d bytes from %v", n, got.Len(), got.From)
		}
		memtest.Release(t, got.Hold)
	}
	for round := range 20 {
		vals := [][]byte{pattern(2048, byte(round)), pattern(2048, byte(round+1))}
		if round%5 == 4 {
			vals = append(vals, []byte("small"), pattern(100000, 7))
		}
		sendObj(t, ep, app, srv, 'O', vals)
		got := recvSegs(t, ep)
		a := wire.NewArena()
		m := cf.NewListBuffers(a)
		if err := wire.DecodeSegments(m, got.Segs, 1, got.Hold); err != nil {
			t.Fatal(err)
		}
		memtest.Release(t, got.Hold) // the arena keeps the packet
		l, err := m.GetMessages()
		if err != nil {
			t.Fatal(err)
		}
		if l.Len() != len(vals) {
			t.Fatalf("round %d: %d values back, want %d", round, l.Len(), len(vals))
		}
		for i, v := range vals {
			g := l.At(i)
			if !bytes.Equal(g, v) {
				t.Fatalf("round %d value %d differs", round, i)
			}
			if len(v) >= 512 && mem.IsRegistered(g) {
				t.Errorf("round %d value %d: in this process's registered memory, want an alias of the child's", round, i)
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	st := ep.ShmStats()
	if st.ZeroCopyEntries < 40 || st.RxZeroCopyBytes < 40*2048 {
		t.Errorf("stats %+v: want >= 40 zero-copy entries sent and 80 KiB received in place", st)
	}
	if err := ep.Send(srv, []byte{'Q'}); err != nil {
		t.Fatal(err)
	}
	_ = ep.Flush()
	waitPool(t, ep, app, 0)
}

// waitPool drives ep until app has want items in use (bounded).
func waitPool(t *testing.T, ep *shm.Endpoint, app *mem.Pool, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	pk := make([]datapath.Packet, 8)
	for app.InUse() != want {
		if time.Now().After(deadline) {
			t.Fatalf("pool %q: %d items in use after 10s, want %d (stats %+v)", app.Name(), app.InUse(), want, ep.ShmStats())
		}
		n, _ := ep.Recv(pk)
		for _, p := range pk[:n] {
			_ = p.Buf.Release()
		}
		_ = ep.Flush()
		_ = ep.Wait(time.Millisecond)
	}
}

// TestPeerCrashReleases: a client process holds zero-copy responses
// without releasing them and is killed (SIGKILL) mid-transfer; the server
// gets every reference back within bounded time, and keeps serving another
// client.
func TestPeerCrashReleases(t *testing.T) {
	ep, app := openTest(t, netip.AddrPort{})
	cmd, lines := child(t, "hold", ep.LocalAddr().String())
	// Serve the child's requests with 2x2048 zero-copy responses until it
	// holds at least 4.
	pk := make([]datapath.Packet, 8)
	deadline := time.Now().Add(20 * time.Second)
	heldN := 0
	for heldN < 4 {
		if time.Now().After(deadline) {
			t.Fatal("child did not hold 4 responses within 20s")
		}
		n, err := ep.Recv(pk)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pk[:n] {
			memtest.Release(t, p.Buf)
			sendObj(t, ep, app, p.From, 'O', [][]byte{pattern(2048, 1), pattern(2048, 2)})
		}
		if l, ok := lines.next(time.Millisecond); ok && strings.HasPrefix(l, "held ") {
			_, _ = fmt.Sscanf(l, "held %d", &heldN)
		}
		_ = ep.Wait(time.Millisecond)
	}
	if app.InUse() == 0 {
		t.Fatal("no reference held for the child's unreleased responses")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitPool(t, ep, app, 0)
	if st := ep.ShmStats(); st.PeersLost < 1 {
		t.Errorf("PeersLost = %d after the child's crash", st.PeersLost)
	}
	// The survivor keeps serving another client.
	other, _ := openTest(t, netip.AddrPort{})
	if err := other.Send(ep.LocalAddr(), []byte("after")); err != nil {
		t.Fatal(err)
	}
	_ = other.Flush()
	got := recvSegs(t, ep)
	if string(got.AppendTo(nil)) != "after" || got.From != other.LocalAddr() {
		t.Errorf("after the crash: %q from %v", got.AppendTo(nil), got.From)
	}
	memtest.Release(t, got.Hold)
}

// TestPeerCrashWhileHeld: values received in place from a process that
// then dies (SIGKILL) stay readable until released (the mapping outlives
// the peer), and releasing them ends the connection.
func TestPeerCrashWhileHeld(t *testing.T) {
	srv := randAddr()
	cmd, _ := child(t, "echo", srv.String())
	ep, app := openTest(t, netip.AddrPort{})
	vals := [][]byte{pattern(2048, 5), pattern(100000, 6)}
	sendObj(t, ep, app, srv, 'O', vals)
	got := recvSegs(t, ep)
	a := wire.NewArena()
	m := cf.NewListBuffers(a)
	if err := wire.DecodeSegments(m, got.Segs, 1, got.Hold); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, got.Hold)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ep.ShmStats().PeersLost == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the child's death was not noticed within 10s")
		}
		_ = ep.Wait(time.Millisecond)
	}
	l, err := m.GetMessages()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if !bytes.Equal(l.At(i), v) {
			t.Errorf("value %d changed after the sender died", i)
		}
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	waitPool(t, ep, app, 0)
	for deadline := time.Now().Add(10 * time.Second); ep.ShmStats().Peers != 0; {
		if time.Now().After(deadline) {
			t.Fatal("connection to the dead child still up")
		}
		_ = ep.Flush()
	}
}

// TestBusyEndpointNoticesHangUp: an endpoint whose every Recv finds
// packets from one peer still notices, from Recv's socket check alone
// (it never calls Wait), that another peer hung up: with its own clock,
// with the reading an event loop passes down each iteration
// (SetLoopTime), and after such a caller stopped passing it.
func TestBusyEndpointNoticesHangUp(t *testing.T) {
	stale := time.Now()
	for _, tc := range []struct {
		name string
		set  func(*shm.Endpoint) // before each busy Recv
	}{
		{"own-clock", func(*shm.Endpoint) {}},
		// An event loop passes its reading down (rpc does).
		{"loop-time", func(ep *shm.Endpoint) { ep.SetLoopTime(time.Now()) }},
		// A caller that stopped passing it: the reading serves two
		// calls, then the endpoint reads the clock again.
		{"stale-loop-time", func(ep *shm.Endpoint) {
			if !stale.IsZero() {
				ep.SetLoopTime(stale)
				stale = time.Time{}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { busyNoticesHangUp(t, tc.set) })
	}
}

func busyNoticesHangUp(t *testing.T, set func(*shm.Endpoint)) {
	a, _ := openTest(t, randAddr())
	b, _ := openTest(t, netip.AddrPort{})
	pool := memtest.NewPool(t, mem.PoolConfig{Name: "c " + t.Name()})
	c, err := shm.Open(datapath.Config{Pool: pool, Options: shm.Options{Namespace: testNS}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []*shm.Endpoint{b, c} {
		if err := ep.Send(a.LocalAddr(), []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if err := ep.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	pk := make([]datapath.Packet, 4)
	for got, deadline := 0, time.Now().Add(10*time.Second); got < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of 2 greetings", got)
		}
		n, err := a.Recv(pk)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pk[:n] {
			_ = p.Buf.Release()
		}
		got += n
		_ = a.Wait(time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	busy := 0
	deadline := time.Now().Add(10 * time.Second)
	for a.ShmStats().PeersLost == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a hang-up not noticed within 10s (%d of the Recvs found packets)", busy)
		}
		if err := b.Send(a.LocalAddr(), []byte("busy")); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		// Spin until b's packet arrives: no Wait, so only Recv's
		// socket check can notice the hang-up.
		for n := 0; n == 0 && time.Now().Before(deadline); {
			set(a)
			if n, err = a.Recv(pk); err != nil {
				t.Fatal(err)
			}
			for _, p := range pk[:n] {
				_ = p.Buf.Release()
			}
			if n > 0 {
				busy++
			}
		}
	}
	if busy == 0 {
		t.Fatal("no Recv found packets")
	}
}
