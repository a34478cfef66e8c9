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

func TestNamedPair(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	name := "cfnstest-named"
	Remove(name)
	p, err := Create(Config{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Remove(name) })
	if p.A.NS != name+"-a" || p.B.NS != name+"-b" {
		t.Fatalf("names %s %s", p.A.NS, p.B.NS)
	}
	if _, err := Create(Config{Name: name}); err == nil {
		t.Fatal("second Create with the same name succeeded")
	}
	if err := Remove(name); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{p.A.NS, p.B.NS} {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Fatalf("%s still present after Remove", ns)
		}
	}
	if err := Remove("../etc"); err == nil {
		t.Fatal("Remove accepted a path")
	}
}
