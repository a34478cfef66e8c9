package xdp_test

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestKernelInterop exchanges datagrams between an AF_XDP endpoint and a
// kernel UDP socket: the kernel validates the IPv4 header checksum and
// (when non-zero) the UDP checksum of what the endpoint builds, and the
// endpoint parses what the kernel builds.
func TestKernelInterop(t *testing.T) {
	for _, c := range []struct {
		name string
		csum bool
	}{{"nocsum", false}, {"csum", true}} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTopo(t, 1500)
			pa, app := tp.pool(t, "A"), tp.pool(t, "app")
			a := tp.open(t, tp.pair.A, pa, xdp.Options{UDPChecksum: c.csum})
			defer a.Close()
			var k *net.UDPConn
			if err := netns.Do(tp.pair.B.NS, func() (err error) {
				k, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(tp.pair.B.Addr4, 0)))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			kaddr := k.LocalAddr().(*net.UDPAddr).AddrPort()

			for _, n := range []int{0, 1, 333, 1000} {
				seg := memtest.Alloc(t, app, pattern(n+1, byte(n)))
				head := pattern(7, 9)
				want := append(append([]byte(nil), head...), seg.Bytes()...)
				if err := a.SendSegments(kaddr, head, []mem.Buf{seg}); err != nil {
					t.Fatal(err)
				}
				memtest.Release(t, seg)
				if err := a.Flush(); err != nil {
					t.Fatal(err)
				}
				_ = k.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 2000)
				m, from, err := k.ReadFromUDPAddrPort(buf)
				if err != nil {
					t.Fatalf("kernel socket did not receive the endpoint's datagram (bad checksum?): %v", err)
				}
				if !bytes.Equal(buf[:m], want) || from != a.LocalAddr() {
					t.Errorf("kernel received %d bytes from %v, want %d from %v", m, from, len(want), a.LocalAddr())
				}
			}
			// Kernel -> endpoint.
			msg := pattern(1200, 4)
			if _, err := k.WriteToUDPAddrPort(msg, a.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			pk := make([]datapath.Packet, 1)
			deadline := time.Now().Add(5 * time.Second)
			for {
				n, err := a.Recv(pk)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("endpoint did not receive the kernel's datagram; stats %+v", a.Stats())
				}
				_ = a.Wait(time.Millisecond)
			}
			if pk[0].From != kaddr || !bytes.Equal(pk[0].Buf.Bytes(), msg) {
				t.Errorf("endpoint received %d bytes from %v, want %d from %v", pk[0].Buf.Len(), pk[0].From, len(msg), kaddr)
			}
			memtest.Release(t, pk[0].Buf)
		})
	}
}
