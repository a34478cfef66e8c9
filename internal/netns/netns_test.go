package netns

import (
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

func TestPairPing(t *testing.T) {
	p := ForTest(t, Config{})
	for _, ns := range []string{p.A.NS, p.B.NS} {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			t.Fatalf("namespace %s missing: %v", ns, err)
		}
	}
	for _, fam := range []struct {
		name string
		a, b netip.Addr
	}{{"udp4", p.A.Addr4, p.B.Addr4}, {"udp6", p.A.Addr6, p.B.Addr6}} {
		t.Run(fam.name, func(t *testing.T) {
			var srv *net.UDPConn
			if err := Do(p.B.NS, func() (err error) {
				srv, err = net.ListenUDP(fam.name, net.UDPAddrFromAddrPort(netip.AddrPortFrom(fam.b, 0)))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var cli *net.UDPConn
			if err := Do(p.A.NS, func() (err error) {
				cli, err = net.ListenUDP(fam.name, net.UDPAddrFromAddrPort(netip.AddrPortFrom(fam.a, 0)))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			if _, err := cli.WriteToUDPAddrPort([]byte("ping"), srv.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
				t.Fatal(err)
			}
			srv.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 16)
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatal(err)
			}
			if string(buf[:n]) != "ping" || from.Addr().Unmap() != fam.a {
				t.Fatalf("got %q from %v", buf[:n], from)
			}
		})
	}
	names := []string{p.A.NS, p.B.NS}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range names {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Fatalf("namespace %s still present after Close", ns)
		}
	}
}

func TestBadNames(t *testing.T) {
	if err := Do("../x", func() error { return nil }); err == nil {
		t.Fatal("Do accepted a path")
	}
	if err := Available(); err != nil {
		t.Skip(err)
	}
	if _, err := Create(Config{Prefix: "a b"}); err == nil {
		t.Fatal("Create accepted a prefix with a space")
	}
}
