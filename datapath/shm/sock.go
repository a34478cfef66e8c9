package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Handshake messages (one SOCK_SEQPACKET message each).
const (
	msgMagic   = 0x48534643 // "CFSH"
	msgVersion = 1
	msgHello   = 1
	msgRefuse  = 2

	helloFixed = 4 + 2 + 1 + 1 + 4*5 + 8 + 1 + 18 + 1 // through nspaces
	maxMsg     = helloFixed + 8*MaxPeerSpaces + 256
)

// ErrRefused is returned (wrapped, with the reason) when a peer refused
// this endpoint or this endpoint refused a peer: its user is not allowed
// (SO_PEERCRED), or its handshake is invalid. No memory was shared.
var ErrRefused = errors.New("shm: peer refused")

// hello is what each side announces: its address, its region's geometry,
// and the sizes of its shared spaces; the descriptors (region, eventfd,
// spaces) travel with it as SCM_RIGHTS.
type hello struct {
	addr       netip.AddrPort
	g          geometry
	regionSize uint64
	maxPayload uint32
	spaces     []uint64
}

func (h *hello) marshal(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b[:0], msgMagic)
	b = binary.LittleEndian.AppendUint16(b, msgVersion)
	b = append(b, msgHello, 0)
	for _, v := range []uint32{h.g.slots, h.g.ringSize, h.g.maxSegs, h.g.slotSize, h.maxPayload} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	b = binary.LittleEndian.AppendUint64(b, h.regionSize)
	ab, _ := h.addr.MarshalBinary() // 6 (IPv4) or 18 (IPv6) bytes
	b = append(b, byte(len(ab)))
	var pad [18]byte
	copy(pad[:], ab)
	b = append(b, pad[:]...)
	b = append(b, byte(len(h.spaces)))
	for _, s := range h.spaces {
		b = binary.LittleEndian.AppendUint64(b, s)
	}
	return b
}

// parseMsg parses a handshake message: a hello, or a refusal (returned as
// an error wrapping ErrRefused). Every field is bounds-checked.
func parseMsg(b []byte) (*hello, error) {
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != msgMagic || binary.LittleEndian.Uint16(b[4:]) != msgVersion {
		return nil, errors.New("shm: handshake message with a bad magic or version")
	}
	switch b[6] {
	case msgRefuse:
		reason := b[8:min(len(b), 8+200)]
		return nil, fmt.Errorf("%w: %q", ErrRefused, reason)
	case msgHello:
	default:
		return nil, fmt.Errorf("shm: unknown handshake message %d", b[6])
	}
	if len(b) < helloFixed {
		return nil, errors.New("shm: truncated hello")
	}
	h := &hello{}
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(b[8+4*i:]) }
	h.g = geometry{slots: u(0), ringSize: u(1), maxSegs: u(2), slotSize: u(3)}
	if h.g.slotSize > h.g.maxSegs*descSize {
		h.g.dataCap = h.g.slotSize - h.g.maxSegs*descSize
	}
	h.maxPayload = u(4)
	h.regionSize = binary.LittleEndian.Uint64(b[28:])
	al := int(b[36])
	if al > 18 {
		return nil, errors.New("shm: hello with a bad address length")
	}
	if err := h.addr.UnmarshalBinary(b[37 : 37+al]); err != nil || !h.addr.IsValid() {
		return nil, fmt.Errorf("shm: hello with a bad address: %v", err)
	}
	ns := int(b[55])
	if ns > MaxPeerSpaces || len(b) != helloFixed+8*ns {
		return nil, fmt.Errorf("shm: hello with %d spaces in %d bytes", ns, len(b))
	}
	for i := range ns {
		h.spaces = append(h.spaces, binary.LittleEndian.Uint64(b[helloFixed+8*i:]))
	}
	if err := h.g.check(); err != nil {
		return nil, fmt.Errorf("shm: hello: %w", err)
	}
	if h.regionSize != h.g.size() {
		return nil, fmt.Errorf("shm: hello: region size %d, want %d for its geometry", h.regionSize, h.g.size())
	}
	return h, nil
}

func refuseMsg(reason string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, msgMagic)
	b = binary.LittleEndian.AppendUint16(b, msgVersion)
	b = append(b, msgRefuse, 0)
	return append(b, reason...)
}

// sockName is the rendezvous name of the endpoint at a: an abstract
// socket name (dir == "") or a path in dir.
func sockName(dir, ns string, a netip.AddrPort) string {
	if dir != "" {
		return dir + "/" + a.String() + ".sock"
	}
	return "@cornflakes-shm/" + ns + "/" + a.String()
}

func unixAddr(name string) *unix.SockaddrUnix {
	if strings.HasPrefix(name, "@") {
		return &unix.SockaddrUnix{Name: "\x00" + name[1:]}
	}
	return &unix.SockaddrUnix{Name: name}
}

func newSock() (int, error) {
	return unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
}

// listen binds a listening socket at name. A path left by a dead endpoint
// (nobody accepts) is removed and bound again.
func listen(name string) (int, error) {
	fd, err := newSock()
	if err != nil {
		return -1, err
	}
	sa := unixAddr(name)
	err = unix.Bind(fd, sa)
	if err == unix.EADDRINUSE && !strings.HasPrefix(name, "@") {
		if probe, perr := newSock(); perr == nil {
			cerr := unix.Connect(probe, sa)
			_ = unix.Close(probe)
			if cerr == unix.ECONNREFUSED {
				_ = os.Remove(name)
				err = unix.Bind(fd, sa)
			}
		}
	}
	if err == nil {
		err = unix.Listen(fd, 128)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// peerCred returns the credentials of the process at the other end of fd.
func peerCred(fd int) (*unix.Ucred, error) {
	return unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
}

// allowed checks a peer's credentials against the allow-list (default:
// our own uid).
func allowed(c *unix.Ucred, uids []uint32) error {
	if len(uids) == 0 {
		uids = []uint32{uint32(os.Getuid())}
	}
	if !slices.Contains(uids, c.Uid) {
		return fmt.Errorf("uid %d (pid %d) is not allowed (allowed uids %v)", c.Uid, c.Pid, uids)
	}
	return nil
}

// sendMsg sends one handshake message with fds attached.
func sendMsg(fd int, b []byte, fds []int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return unix.Sendmsg(fd, b, oob, nil, unix.MSG_NOSIGNAL)
}

// recvMsg receives one handshake message and the fds attached (owned by
// the caller, close-on-exec). n == 0 with a nil error is the peer's
// hang-up. At most maxFds are accepted; a message carrying more is
// refused and every fd it carried closed.
func recvMsg(fd int, buf []byte, maxFds int) (n int, fds []int, err error) {
	oob := make([]byte, unix.CmsgSpace(4*(MaxPeerSpaces+2)))
	n, oobn, flags, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
	if err != nil {
		return 0, nil, err
	}
	if oobn > 0 {
		cmsgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr == nil {
			for i := range cmsgs {
				if got, e := unix.ParseUnixRights(&cmsgs[i]); e == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || len(fds) > maxFds {
		closeAll(fds)
		return 0, nil, errors.New("shm: handshake message truncated or carrying too many descriptors")
	}
	return n, fds, nil
}

func closeAll(fds []int) {
	for _, f := range fds {
		if f >= 0 {
			_ = unix.Close(f)
		}
	}
}

// isEventfd reports whether fd is an eventfd (what a peer's doorbell must
// be: writing 8 bytes to it never blocks and reaches nobody else).
func isEventfd(fd int) bool {
	l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && l == "anon_inode:[eventfd]"
}

// mapPeer maps size bytes of a peer's memfd read-only after checking that
// it is sealed against shrinking (so the mapping can never fault) and
// large enough. fd stays owned by the caller.
func mapPeer(fd int, size uint64) ([]byte, error) {
	if err := checkPeerFd(fd, size); err != nil {
		return nil, err
	}
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mapping peer memory: %w", err)
	}
	return unsafe.Slice((*byte)(p), size), nil
}

// checkPeerFd checks that fd is a memfd sealed against shrinking and at
// least size bytes large (size in (0, 1 TiB]).
func checkPeerFd(fd int, size uint64) error {
	if size == 0 || size > 1<<40 {
		return fmt.Errorf("shm: peer memory of %d bytes", size)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("shm: peer memory is not a sealable memfd: %w", err)
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return errors.New("shm: peer memory is not sealed against shrinking")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Size < 0 || uint64(st.Size) < size {
		return fmt.Errorf("shm: peer memory has %d bytes, announced %d", st.Size, size)
	}
	return nil
}

func unmap(b []byte) {
	if len(b) > 0 {
		_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
	}
}

// newRegion creates, sizes, seals and maps (read-write) a region of ours.
func newRegion(g geometry) (fd int, r *region, err error) {
	fd, err = unix.MemfdCreate("cornflakes-shm", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	size := g.size()
	if err = unix.Ftruncate(fd, int64(size)); err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
	}
	var p unsafe.Pointer
	if err == nil {
		p, err = unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: creating a %d-byte region: %w", size, err)
	}
	r = newRegionOf(unsafe.Slice((*byte)(p), size), g)
	r.initHeader()
	return fd, r, nil
}
