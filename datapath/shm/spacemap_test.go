package shm

import (
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

var spaceMapNS = fmt.Sprintf("spacemap-%d", os.Getpid())

// cachedSpace returns the cache entry of space s's memfd (nil if none).
func cachedSpace(t *testing.T, s *mem.Space) *spaceMap {
	t.Helper()
	k, err := keyOf(s.SharedFd())
	if err != nil {
		t.Fatal(err)
	}
	spaceMaps.Lock()
	defer spaceMaps.Unlock()
	return spaceMaps.m[k]
}

// TestSpaceMapReuse: a second connection from this process to a server
// whose space a first, closed connection mapped reuses that mapping (same
// address: its pages are not faulted again), and the mapping goes away
// once nobody uses it and the linger is over (here: flushSpaceMaps).
func TestSpaceMapReuse(t *testing.T) {
	space, err := mem.NewSpace(mem.SpaceConfig{Size: 8 << 20, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = space.Close() })
	app := memtest.NewPool(t, mem.PoolConfig{Name: "app", Space: space})
	srv, err := Open(datapath.Config{Options: Options{Namespace: spaceMapNS, Spaces: []*mem.Space{space}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	val := memtest.Alloc(t, app, make([]byte, 4096))
	var bases []uintptr
	for round := range 2 {
		cli, err := Open(datapath.Config{Options: Options{Namespace: spaceMapNS}})
		if err != nil {
			t.Fatal(err)
		}
		// The client dials; the server answers with a zero-copy value.
		if err := cli.Send(srv.LocalAddr(), []byte("hi")); err != nil {
			t.Fatal(err)
		}
		_ = cli.Flush()
		from := recvOne(t, srv, cli)
		if err := srv.SendSegments(from, []byte("v"), []mem.Buf{val}); err != nil {
			t.Fatal(err)
		}
		_ = srv.Flush()
		recvOne(t, cli, srv)
		sm := cachedSpace(t, space)
		if sm == nil || sm.refs != 1 {
			t.Fatalf("round %d: cache entry %+v, want one use", round, sm)
		}
		bases = append(bases, uintptr(unsafe.Pointer(unsafe.SliceData(sm.mem))))
		if err := cli.Close(); err != nil {
			t.Fatal(err)
		}
		if sm.refs != 0 {
			t.Fatalf("round %d: %d uses after the client closed", round, sm.refs)
		}
	}
	memtest.Release(t, val)
	if bases[0] != bases[1] {
		t.Errorf("second connection mapped the space again at %#x (first %#x)", bases[1], bases[0])
	}
	flushSpaceMaps()
	if sm := cachedSpace(t, space); sm != nil {
		t.Errorf("mapping still cached after the flush: %+v", sm)
	}
}

// recvOne receives one packet on ep within 10 s (driving peer too) and
// returns its source.
func recvOne(t *testing.T, ep, peer *Endpoint) netip.AddrPort {
	t.Helper()
	pk := make([]datapath.Packet, 1)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		n, err := ep.Recv(pk)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			_ = pk[0].Buf.Release()
			return pk[0].From
		}
		_ = peer.Flush()
		_ = ep.Wait(time.Millisecond)
	}
	t.Fatal("no packet within 10s")
	return netip.AddrPort{}
}
