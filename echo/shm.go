package echo

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/mem"
)

// ShmSpace is the shared space of each side of a shm run: the endpoint's
// RX buffers and the application pool (requests, Cornflakes arenas), a few
// MiB at most, with room to spare. It is a reservation, committed as the
// pools grow.
const ShmSpace = 256 << 20

// openShmSide opens one side on datapath shm: both of its pools live in
// one shared space that the endpoint registers for sending, so that what
// the side sends from them (the raw echo's payload, Cornflakes' zero-copy
// fields) goes out as descriptors, and the peer maps the space read-only.
func openShmSide(name string) (_ *side, err error) {
	s := &side{}
	defer func() {
		if err != nil {
			err = fmt.Errorf("echo: datapath shm: %w", err)
			_ = s.close()
		}
	}()
	if s.space, err = mem.NewSpace(mem.SpaceConfig{Size: ShmSpace, Shared: true}); err != nil {
		return s, err
	}
	if s.pool, err = mem.NewPool(mem.PoolConfig{Name: "echo " + name, Space: s.space}); err != nil {
		return s, err
	}
	if s.app, err = mem.NewPool(mem.PoolConfig{Name: "echo app " + name, Space: s.space}); err != nil {
		return s, err
	}
	s.ep, err = datapath.Open("shm", datapath.Config{Pool: s.pool, Local: netip.MustParseAddrPort("127.0.0.1:0"),
		Options: shm.Options{Spaces: []*mem.Space{s.space}}})
	return s, err
}
