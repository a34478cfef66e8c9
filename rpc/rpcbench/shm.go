package rpcbench

import (
	"errors"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm" // registers "shm"
	"github.com/cornflakes-go/cornflakes/mem"
)

// shmMaxPayload is the packet size of rpcbench's shm endpoints: a 1 MiB
// message (zc_resp's large response) and its RPC header fit in one packet,
// one descriptor.
const shmMaxPayload = 1<<20 + 4096

// shmSpaceSize is the shared space of a shm run: the endpoints' pools
// (8 MiB requests of large_bw, preallocated responses of up to 20000
// sessions) and zc_resp's buffers, committed as they grow.
const shmSpaceSize = 2 << 30

// newShmSpace reserves the run's shared space.
func newShmSpace() (*mem.Space, error) {
	return mem.NewSpace(mem.SpaceConfig{Size: shmSpaceSize, Shared: true})
}

// shmOptions registers space (if set) for sending.
func shmOptions(space *mem.Space) shm.Options {
	if space == nil {
		return shm.Options{}
	}
	return shm.Options{Spaces: []*mem.Space{space}}
}

// busy reports a send refused because the peer holds every TX slot
// (shm.ErrBusy): a peer that is behind, not a failure.
func busy(err error) bool { return errors.Is(err, shm.ErrBusy) }

// shmStatsOf returns ep's detailed counters (shm.Endpoint.ShmStats), or
// its datapath.Stats on another datapath, for error messages.
func shmStatsOf(ep datapath.Endpoint) any {
	if s, ok := ep.(interface{ ShmStats() shm.Stats }); ok {
		return s.ShmStats()
	}
	return ep.Stats()
}
