// Package wakefd is the eventfd a datapath's Wait polls next to its socket,
// so that another goroutine can cut the Wait short (the datapath's Wake,
// which the RPC endpoint calls when it hands work to a sleeping loop).
package wakefd

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// FD is a non-blocking eventfd. Wake may be called from any goroutine;
// Open, Fd, Drain and Close belong to the endpoint's owner. The mutex
// orders Wake against Close: a closed descriptor number may be reused at
// once by another open, which a late Wake must not write to.
//
// The zero FD is closed: Wake reports ErrClosed and Close does nothing.
type FD struct {
	mu   sync.Mutex
	open bool
	fd   int
	buf  [8]byte // Drain reads the counter into it
	one  [8]byte // little-endian 1, what Wake adds (a field: no allocation under -race)
}

// Open creates the eventfd.
func (w *FD) Open() error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	w.mu.Lock()
	w.fd, w.open = fd, true
	w.mu.Unlock()
	return nil
}

// Fd is the descriptor to put in the poll set (POLLIN when woken), -1
// when it is not open.
func (w *FD) Fd() int {
	if !w.open {
		return -1
	}
	return w.fd
}

// Wake makes the descriptor readable: a poll in progress, or the next one,
// returns. It returns datapath.ErrClosed after Close.
func (w *FD) Wake() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.open {
		return datapath.ErrClosed
	}
	w.one[0] = 1
	if _, err := unix.Write(w.fd, w.one[:]); err != nil && err != unix.EAGAIN { // EAGAIN: the counter is saturated, the poll returns anyway
		return fmt.Errorf("eventfd write: %w", err)
	}
	return nil
}

// Drain resets the counter after a poll reported the descriptor readable.
func (w *FD) Drain() { _, _ = unix.Read(w.fd, w.buf[:]) }

// Close closes the descriptor (nothing to do when it is not open).
func (w *FD) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.open {
		return nil
	}
	w.open = false
	return unix.Close(w.fd)
}
