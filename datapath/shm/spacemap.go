package shm

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// SpaceMapLinger is how long a read-only mapping of a peer's shared space
// stays mapped after the last connection using it ended, so that the next
// connection in this process to a peer sharing the same space (the same
// memfd: the same server, reconnecting or with another endpoint) reuses
// it instead of mapping it again.
//
// A fresh mapping costs a page fault at the first read of each of its
// pages (about 5 µs each on a VM with page-table isolation, against
// 0.5 µs for the read itself): a client that opens a connection per
// benchmark point, or many short connections, would pay it for every
// value it reads. While a mapping lingers, the peer's memory it maps
// (whatever the peer had committed) stays allocated even if the peer
// exits; it is unmapped SpaceMapLinger after its last use.
const SpaceMapLinger = 10 * time.Second

// spaceKey identifies a shared-memory file: a mapping pins its inode, so
// the pair cannot name another file while the mapping exists.
type spaceKey struct{ dev, ino uint64 }

func keyOf(fd int) (spaceKey, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return spaceKey{}, err
	}
	return spaceKey{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// spaceMap is one cached read-only mapping of a peer's space.
type spaceMap struct {
	key   spaceKey
	mem   []byte
	refs  int
	timer *time.Timer // unmaps it SpaceMapLinger after refs fell to zero
}

// spaceMaps is the process-wide cache of peer space mappings.
var spaceMaps struct {
	sync.Mutex
	m map[spaceKey]*spaceMap
}

// mapSpace maps a peer's shared space (fd, of at least size bytes) read-only,
// reusing a cached mapping of the same file of the same size. The checks of
// mapPeer (a sealed memfd, large enough) apply either way. fd is not
// consumed. Release the result with releaseSpace.
func mapSpace(fd int, size uint64) (*spaceMap, error) {
	key, err := keyOf(fd)
	if err != nil {
		return nil, err
	}
	spaceMaps.Lock()
	if sm := spaceMaps.m[key]; sm != nil && uint64(len(sm.mem)) == size {
		// Same file: validate it as a new mapping would be (seals and
		// size are properties of the file, checked again).
		spaceMaps.Unlock()
		if err := checkPeerFd(fd, size); err != nil {
			return nil, err
		}
		spaceMaps.Lock()
		if sm2 := spaceMaps.m[key]; sm2 == sm {
			sm.refs++
			if sm.timer != nil {
				sm.timer.Stop()
				sm.timer = nil
			}
			spaceMaps.Unlock()
			return sm, nil
		}
	}
	spaceMaps.Unlock()
	mem, err := mapPeer(fd, size)
	if err != nil {
		return nil, err
	}
	sm := &spaceMap{key: key, mem: mem, refs: 1}
	spaceMaps.Lock()
	if spaceMaps.m == nil {
		spaceMaps.m = make(map[spaceKey]*spaceMap)
	}
	if old := spaceMaps.m[key]; old == nil || old.refs == 0 {
		if old != nil {
			if old.timer != nil {
				old.timer.Stop()
			}
			unmap(old.mem)
		}
		spaceMaps.m[key] = sm
	} else {
		sm.key = spaceKey{} // not cached: another size is in use
	}
	spaceMaps.Unlock()
	return sm, nil
}

// releaseSpace ends one use of sm: a cached mapping is unmapped
// SpaceMapLinger after its last use unless reused meanwhile, an uncached
// one at once.
func releaseSpace(sm *spaceMap) {
	spaceMaps.Lock()
	defer spaceMaps.Unlock()
	sm.refs--
	if sm.refs > 0 {
		return
	}
	if spaceMaps.m[sm.key] != sm {
		unmap(sm.mem)
		return
	}
	sm.timer = time.AfterFunc(SpaceMapLinger, func() {
		spaceMaps.Lock()
		defer spaceMaps.Unlock()
		if sm.refs == 0 && spaceMaps.m[sm.key] == sm {
			delete(spaceMaps.m, sm.key)
			unmap(sm.mem)
		}
	})
}

// flushSpaceMaps unmaps every cached mapping no connection uses (tests).
func flushSpaceMaps() {
	spaceMaps.Lock()
	defer spaceMaps.Unlock()
	for k, sm := range spaceMaps.m {
		if sm.refs == 0 {
			if sm.timer != nil {
				sm.timer.Stop()
			}
			delete(spaceMaps.m, k)
			unmap(sm.mem)
		}
	}
}
