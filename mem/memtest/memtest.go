// Package memtest has test helpers for code that uses registered memory:
// pools that check, when the test ends, that every reference was released.
package memtest

import (
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
)

// NewPool makes a pool for the test (cfg is optional; the first one is
// used) and registers a cleanup that fails the test when items are still
// in use at its end (a leaked reference), then closes the pool.
func NewPool(t testing.TB, cfg ...mem.PoolConfig) *mem.Pool {
	t.Helper()
	var c mem.PoolConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.Name == "" {
		c.Name = t.Name()
	}
	p, err := mem.NewPool(c)
	if err != nil {
		t.Fatalf("memtest: NewPool: %v", err)
	}
	t.Cleanup(func() { Close(t, p) })
	return p
}

// Close fails the test when p has items in use (reporting the classes),
// then closes it. Closing an already closed pool is not an error here.
func Close(t testing.TB, p *mem.Pool) {
	t.Helper()
	if n := p.InUse(); n != 0 {
		t.Errorf("memtest: pool %q: %d item(s) still in use at Close (leaked references)", p.Name(), n)
		for _, c := range p.Stats().Classes {
			if c.InUse > 0 {
				t.Errorf("memtest:   class %d B: %d in use", c.Size, c.InUse)
			}
		}
		return
	}
	if err := p.Close(); err != nil && !errors.Is(err, mem.ErrClosed) {
		t.Errorf("memtest: closing pool %q: %v", p.Name(), err)
	}
}

// AssertInUse fails the test unless p has exactly want items in use.
func AssertInUse(t testing.TB, p *mem.Pool, want int) {
	t.Helper()
	if got := p.InUse(); got != want {
		t.Errorf("memtest: pool %q: InUse() = %d, want %d", p.Name(), got, want)
	}
}

// Alloc allocates len(data) bytes holding a copy of data, failing the test
// on error. The caller owns the returned reference.
func Alloc(t testing.TB, p *mem.Pool, data []byte) mem.Buf {
	t.Helper()
	b, err := p.AllocCopy(data)
	if err != nil {
		t.Fatalf("memtest: AllocCopy(%d bytes): %v", len(data), err)
	}
	return b
}

// Release releases b, failing the test on error.
func Release(t testing.TB, b mem.Buf) {
	t.Helper()
	if err := b.Release(); err != nil {
		t.Errorf("memtest: Release: %v", err)
	}
}
