package wakefd

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// TestFD: the zero FD is closed; after Open a Wake makes the descriptor
// readable and Drain resets it; after Close, Wake reports ErrClosed and a
// second Close does nothing.
func TestFD(t *testing.T) {
	var w FD
	if w.Fd() != -1 || !errors.Is(w.Wake(), datapath.ErrClosed) || w.Close() != nil {
		t.Fatal("the zero FD is not closed")
	}
	if err := w.Open(); err != nil {
		t.Fatal(err)
	}
	readable := func() bool {
		p := []unix.PollFd{{Fd: int32(w.Fd()), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if readable() {
		t.Fatal("readable before Wake")
	}
	for range 3 { // wakes add up; one Drain resets them
		if err := w.Wake(); err != nil {
			t.Fatal(err)
		}
	}
	if !readable() {
		t.Fatal("not readable after Wake")
	}
	w.Drain()
	if readable() {
		t.Fatal("still readable after Drain")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Fd() != -1 || !errors.Is(w.Wake(), datapath.ErrClosed) || w.Close() != nil {
		t.Fatal("Wake or Close after Close")
	}
}
