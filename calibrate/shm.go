package calibrate

import (
	"github.com/cornflakes-go/cornflakes/datapath/shm" // registers "shm"
	"github.com/cornflakes-go/cornflakes/mem"
)

// ShmReserve is what a shm sweep adds to the working set in its shared
// space (pool rounding to 2 MiB regions).
const ShmReserve = 64 << 20

// newShmSpace reserves a shared space (mem.SpaceConfig.Shared) of size
// bytes, committed as the working set's pool grows.
func newShmSpace(size int64) (*mem.Space, error) {
	return mem.NewSpace(mem.SpaceConfig{Size: size, Shared: true})
}

// shmOptions registers shared (if set) for sending.
func shmOptions(shared *mem.Space) shm.Options {
	if shared == nil {
		return shm.Options{}
	}
	return shm.Options{Spaces: []*mem.Space{shared}}
}
