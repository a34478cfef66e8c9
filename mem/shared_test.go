package mem_test

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/mem"
)

// TestSharedSpace: a shared space's memfd holds exactly what its pools
// hold, at Offset; it is sealed against resizing; a closed pool's memory
// reads as zeros through another mapping (the hole is punched, the size
// kept); the space's Close closes the descriptor.
func TestSharedSpace(t *testing.T) {
	s, err := mem.NewSpace(mem.SpaceConfig{Size: 8 << 20, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Shared() || s.SharedFd() < 0 {
		t.Fatal("a Shared space has no memfd")
	}
	seals, err := unix.FcntlInt(uintptr(s.SharedFd()), unix.F_GET_SEALS, 0)
	if err != nil || seals&mem.SharedSeals != mem.SharedSeals {
		t.Fatalf("seals %#x (%v), want %#x", seals, err, mem.SharedSeals)
	}
	if err := unix.Ftruncate(s.SharedFd(), 4096); err == nil {
		t.Fatal("the memfd could be shrunk")
	}
	view, err := unix.Mmap(s.SharedFd(), 0, s.Len(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(view)
	p, err := mem.NewPool(mem.PoolConfig{Name: "shared", Space: s})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.AllocCopy([]byte("visible to peers"))
	if err != nil {
		t.Fatal(err)
	}
	off, ok := s.Offset(b.Bytes())
	if !ok {
		t.Fatal("Offset: not in the space")
	}
	if got := view[off : off+uint64(b.Len())]; !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("the memfd holds %q at the buffer's offset, want %q", got, b.Bytes())
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := view[off : off+16]; !bytes.Equal(got, make([]byte, 16)) {
		t.Errorf("after the pool's Close the memfd still holds %q (hole not punched)", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.SharedFd() != -1 {
		t.Error("SharedFd after Close")
	}
	// HugepagesRequired: a hugetlb memfd; committing fails with
	// ErrHugepages when no 2 MiB page can be had.
	hs, err := mem.NewSpace(mem.SpaceConfig{Size: 4 << 20, Shared: true, Hugepages: mem.HugepagesRequired})
	if err != nil {
		if !errors.Is(err, mem.ErrHugepages) {
			t.Errorf("HugepagesRequired: %v, want ErrHugepages", err)
		}
		return
	}
	defer hs.Close()
	hp, err := mem.NewPool(mem.PoolConfig{Space: hs})
	if err != nil {
		t.Fatal(err)
	}
	defer hp.Close()
	if hb, err := hp.Alloc(100); err == nil {
		t.Logf("explicit hugepages available: %+v", hs.Stats())
		_ = hb.Release()
	} else if !errors.Is(err, mem.ErrHugepages) {
		t.Errorf("Alloc in a hugetlb shared space without hugepages: %v, want ErrHugepages", err)
	}
}
