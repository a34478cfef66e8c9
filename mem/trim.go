package mem

import (
	"fmt"
	"time"
	"unsafe"
)

// Trim returns to the OS the memory of every region that has had no item
// allocated for at least idle, except one region per class (so that a class
// in use does not pay for a region again when traffic resumes), as seen by
// successive Trim calls: a Trim
// that finds a region unused remembers the time, and the first Trim at
// least idle later that finds it still unused, and not allocated from in
// between, decommits it.
// Call it periodically (the RPC endpoint and the key-value server do, every
// second); its cost is one pass over the pool's regions.
//
// A decommitted region keeps its address range and item ids; its items
// leave the free list, and the next Alloc that needs room in its class
// commits it again before making a new region. Regions of a pre-committed
// space (SpaceConfig.Commit, e.g. an AF_XDP UMEM the kernel holds) are
// never decommitted. Trim returns the bytes it decommitted. Like Alloc, it
// belongs to the pool's goroutine unless the pool is Concurrent.
func (p *Pool) Trim(idle time.Duration) int64 {
	if p.conc {
		p.mu.Lock()
		defer p.mu.Unlock()
	} else if checked {
		p.enter()
		defer p.exit()
	}
	if p.closed || p.space.committed {
		return 0
	}
	now := time.Now().UnixNano()
	var freed int64
	for ci := range p.classes {
		c := &p.classes[ci]
		var drop []*region
		committed := len(c.regions) - len(c.parked)
		for _, r := range c.regions {
			switch {
			case r.decommitted:
			case r.inUse > 0:
				r.touched, r.idleSince = false, 0
			case r.touched || r.idleSince == 0:
				r.touched, r.idleSince = false, now // unused from now on, at the latest
			case now-r.idleSince >= int64(idle) && committed > 1:
				// Each class keeps one region: a burst's memory goes back,
				// the reservation of a class in use stays (no first-use
				// stall when traffic resumes).
				committed--
				r.dropping = true
				drop = append(drop, r)
			}
		}
		if len(drop) == 0 {
			continue
		}
		// Take the regions' items off the free list, then their memory.
		out := c.free[:0]
		for _, id := range c.free {
			if !c.regions[id>>c.perShift].dropping {
				out = append(out, id)
			}
		}
		c.free = out
		for _, r := range drop {
			r.dropping = false
			if err := p.space.decommitRegion(r); err != nil {
				// The memory stays; put the items back.
				for j := int32(0); j < 1<<c.perShift; j++ {
					c.free = append(c.free, r.idBase+uint32(j))
				}
				r.idleSince = 0
				continue
			}
			r.decommitted = true
			c.parked = append(c.parked, r)
			p.decommitted += int64(r.length)
			p.decommits++
			freed += int64(r.length)
		}
	}
	return freed
}

// recommit commits parked region r of class c again and puts its items
// back on the free list.
func (p *Pool) recommit(c *class, r *region) error {
	if err := p.space.recommitRegion(r); err != nil {
		p.exhaustions++
		return &ExhaustedError{Pool: p.name, Class: c.size, Limit: p.maxBytes, Cause: err}
	}
	c.parked = c.parked[:len(c.parked)-1]
	r.decommitted, r.idleSince, r.touched = false, 0, false
	for j := (1 << c.perShift) - 1; j >= 0; j-- {
		c.free = append(c.free, r.idBase+uint32(j))
	}
	if checked {
		fill(unsafe.Slice((*byte)(r.ptr), r.length), PoisonByte)
	}
	p.decommitted -= int64(r.length)
	p.recommits++
	return nil
}

// decommitRegion returns r's memory to the OS, keeping its address range.
func (s *Space) decommitRegion(r *region) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.decommit(uintptr(r.slot)<<SlotShift, uintptr(r.nslots)<<SlotShift)
}

// recommitRegion maps r's memory again (zeroed; hugepages and mlock as
// when it was first committed).
func (s *Space) recommitRegion(r *region) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.commit(uintptr(r.slot)<<SlotShift, uintptr(r.nslots)<<SlotShift); err != nil {
		return fmt.Errorf("mem: recommitting a trimmed region: %w", err)
	}
	return nil
}

// unclaimDecommitted is Space.unclaim for a region whose memory Trim
// already returned (so it is not decommitted, nor subtracted, twice).
func (s *Space) unclaimDecommitted(first, n int) error {
	for i := first; i < first+n; i++ {
		s.slots[i].Store(nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := first; i < first+n; i++ {
		s.used[i] = false
	}
	s.nused -= n
	if first < s.hint {
		s.hint = first
	}
	return nil
}
