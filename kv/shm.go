package kv

import (
	"github.com/cornflakes-go/cornflakes/datapath/shm" // registers "shm"
	"github.com/cornflakes-go/cornflakes/mem"
)

// DatapathShm is shared memory between processes on one host
// (datapath/shm): a rendezvous over a Unix domain socket, descriptor rings
// in shared memory, and values sent zero-copy from the store's pool, which
// lives in a shared space the client maps read-only. Session management
// still runs over the Nexus's UDP socket on loopback.
const DatapathShm = "shm"

// touchSegmentsOn switches the client's shm.Options.TouchSegments (on by
// default; the benchmarks switch it off to compare).
var touchSegmentsOn = true

// shmStoreSpace returns the shared space (mem.SpaceConfig.Shared) the
// store's pool of a server on datapath shm lives in, so that every value is
// sent as a descriptor into it. The space is a reservation: memory is
// committed only as the pool grows. poolBytes is the pool's limit; the
// space adds room for the pool's rounding to its regions.
func shmStoreSpace(poolBytes int64) (*mem.Space, error) {
	return mem.NewSpace(mem.SpaceConfig{Size: poolBytes + poolBytes/8 + 64<<20, Shared: true})
}

// shmOptions are the options of a server or client endpoint on datapath
// shm: spaces (the store's, on a server) are registered for sending. A
// client's endpoint (no spaces) sets shm.Options.TouchSegments: the
// responses' values it receives in place are read by the application (a
// load generator checks them), so a batch's first reads are made together.
func shmOptions(spaces ...*mem.Space) shm.Options {
	var sp []*mem.Space
	for _, s := range spaces {
		if s != nil {
			sp = append(sp, s)
		}
	}
	return shm.Options{Spaces: sp, TouchSegments: len(sp) == 0 && touchSegmentsOn}
}
