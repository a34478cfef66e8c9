package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// ErrNoNeighbour is returned by a send to an IPv4 address whose MAC address
// is neither configured (Options.PeerMAC), nor in the kernel's neighbour
// table of the endpoint's interface, nor learned from a received packet.
// This datapath does not run ARP: add a static entry (`ip neigh replace
// ADDR lladdr MAC dev IF nud permanent`; `cornflakes netns up` does) or
// ping the peer once through the kernel first.
var ErrNoNeighbour = errors.New("xdp: no neighbour entry (MAC address) for destination")

// neighTable resolves IPv4 addresses to MAC addresses through a netlink
// socket opened in the endpoint's network namespace (so lookups work from
// any thread later). Results are cached; a miss dumps the kernel's table
// once per call.
type neighTable struct {
	fd      int
	ifindex int
	seq     uint32
	cache   map[netip.Addr][6]byte
	buf     []byte
	// last is the most recently looked-up or learned entry: a server
	// replying to one client and a client talking to one server hit it
	// on every packet without a map lookup.
	last    netip.Addr
	lastMAC [6]byte
}

func openNeighTable(ifindex int) (*neighTable, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("xdp: netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("xdp: netlink bind: %w", err)
	}
	tv := unix.Timeval{Sec: 1}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return &neighTable{fd: fd, ifindex: ifindex, cache: make(map[netip.Addr][6]byte), buf: make([]byte, 1<<16)}, nil
}

func (t *neighTable) close() {
	if t != nil && t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
}

// learn records a mapping seen in a received packet (it never replaces an
// existing entry, so a spoofed source cannot redirect configured traffic).
func (t *neighTable) learn(a netip.Addr, mac [6]byte) {
	if a == t.last {
		return
	}
	if _, ok := t.cache[a]; !ok && len(t.cache) < maxNeighbours {
		t.cache[a] = mac
	}
}

// maxNeighbours bounds the learned/cached neighbour entries.
const maxNeighbours = 4096

// lookup returns the MAC address of a.
func (t *neighTable) lookup(a netip.Addr) ([6]byte, error) {
	if a == t.last && a.IsValid() {
		return t.lastMAC, nil
	}
	if mac, ok := t.cache[a]; ok {
		t.last, t.lastMAC = a, mac
		return mac, nil
	}
	if err := t.refresh(); err != nil {
		return [6]byte{}, err
	}
	if mac, ok := t.cache[a]; ok {
		t.last, t.lastMAC = a, mac
		return mac, nil
	}
	return [6]byte{}, fmt.Errorf("%w %v", ErrNoNeighbour, a)
}

// refresh dumps the IPv4 neighbour table of the interface (RTM_GETNEIGH)
// into the cache.
func (t *neighTable) refresh() error {
	t.seq++
	t.last = netip.Addr{} // the dump may change any entry
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofNdMsg)
	binary.NativeEndian.PutUint32(req[0:4], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:6], unix.RTM_GETNEIGH)
	binary.NativeEndian.PutUint16(req[6:8], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:12], t.seq)
	req[unix.SizeofNlMsghdr] = unix.AF_INET
	binary.NativeEndian.PutUint32(req[unix.SizeofNlMsghdr+4:], uint32(t.ifindex))
	if err := unix.Sendto(t.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("xdp: netlink RTM_GETNEIGH: %w", err)
	}
	for range 1024 { // bounded: a dump is a few messages
		n, _, err := unix.Recvfrom(t.fd, t.buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("xdp: netlink receive: %w", err)
		}
		b := t.buf[:n]
		for len(b) >= unix.SizeofNlMsghdr {
			l := int(binary.NativeEndian.Uint32(b[0:4]))
			typ := binary.NativeEndian.Uint16(b[4:6])
			seq := binary.NativeEndian.Uint32(b[8:12])
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return errors.New("xdp: malformed netlink message")
			}
			if seq == t.seq {
				switch typ {
				case unix.NLMSG_DONE:
					return nil
				case unix.NLMSG_ERROR:
					return errors.New("xdp: netlink RTM_GETNEIGH failed")
				case unix.RTM_NEWNEIGH:
					t.parseNeigh(b[unix.SizeofNlMsghdr:l])
				}
			}
			al := (l + 3) &^ 3
			if al >= len(b) {
				break
			}
			b = b[al:]
		}
	}
	return errors.New("xdp: netlink neighbour dump did not end")
}

func (t *neighTable) parseNeigh(b []byte) {
	if len(b) < unix.SizeofNdMsg {
		return
	}
	family := b[0]
	ifindex := int(int32(binary.NativeEndian.Uint32(b[4:8])))
	state := binary.NativeEndian.Uint16(b[8:10])
	if family != unix.AF_INET || ifindex != t.ifindex {
		return
	}
	if state&(unix.NUD_REACHABLE|unix.NUD_STALE|unix.NUD_PERMANENT|unix.NUD_NOARP|unix.NUD_DELAY|unix.NUD_PROBE) == 0 {
		return
	}
	var dst netip.Addr
	var mac [6]byte
	var haveMAC bool
	attrs := b[unix.SizeofNdMsg:]
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs[0:2]))
		typ := binary.NativeEndian.Uint16(attrs[2:4])
		if l < 4 || l > len(attrs) {
			return
		}
		v := attrs[4:l]
		switch typ {
		case unix.NDA_DST:
			if len(v) == 4 {
				dst = netip.AddrFrom4([4]byte(v))
			}
		case unix.NDA_LLADDR:
			if len(v) == 6 {
				copy(mac[:], v)
				haveMAC = true
			}
		}
		al := (l + 3) &^ 3
		if al > len(attrs) {
			break
		}
		attrs = attrs[al:]
	}
	if dst.IsValid() && haveMAC && len(t.cache) < maxNeighbours {
		t.cache[dst] = mac
	}
}
