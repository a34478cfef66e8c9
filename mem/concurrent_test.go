package mem_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestConcurrentHammer shares a Concurrent pool between goroutines that
// allocate, fill, clone, hand references to each other over channels,
// recover interior slices and release, checking that no item is reused
// while a reference is held and that the accounting returns to zero.
func TestConcurrentHammer(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "hammer", Concurrent: true, MaxBytes: 64 << 20})
	const workers = 4
	iters := 3000
	if testing.Short() {
		iters = 500
	}
	type msg struct {
		b    mem.Buf
		fill byte
	}
	ch := make(chan msg, 64)
	var wg sync.WaitGroup
	errc := make(chan error, workers*2)
	for w := range workers {
		wg.Add(2)
		go func() { // producer
			defer wg.Done()
			for i := range iters {
				n := 1 + (i*131+w*17)%9000
				b, err := p.Alloc(n)
				if err != nil {
					errc <- err
					return
				}
				fill := byte(w*31 + i)
				bs := b.Bytes()
				for j := range bs {
					bs[j] = fill
				}
				c := b.Clone()
				ch <- msg{c, fill} // hand one reference to a consumer
				if r, ok := mem.Recover(bs[n/2:]); ok {
					if r.Refs() < 2 {
						errc <- errors.New("recovered reference count too low")
					}
					_ = r.Release()
				} else {
					errc <- errors.New("Recover of a live item failed")
					return
				}
				if err := b.Release(); err != nil {
					errc <- err
					return
				}
			}
		}()
		go func() { // consumer
			defer wg.Done()
			for i := 0; i < iters; i++ {
				m := <-ch
				for j, v := range m.b.Bytes() {
					if v != m.fill {
						errc <- errors.New("item reused while referenced")
						_ = j
						break
					}
				}
				if err := m.b.Release(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if n := p.InUse(); n != 0 {
		t.Fatalf("InUse = %d", n)
	}
	st := p.Stats()
	var allocs uint64
	for _, c := range st.Classes {
		allocs += c.Allocs
		if c.Free != c.Items {
			t.Errorf("class %d: %d free of %d items", c.Size, c.Free, c.Items)
		}
	}
	if allocs != uint64(workers*iters) {
		t.Errorf("allocs = %d, want %d", allocs, workers*iters)
	}
}

// TestConcurrentDoubleRelease: racing releases of the last reference free
// the item exactly once.
func TestConcurrentDoubleRelease(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Concurrent: true})
	for range 200 {
		b := mustAlloc(t, p, 100)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ok, dbl int
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := b.Release()
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, mem.ErrDoubleRelease), errors.Is(err, mem.ErrUseAfterRelease):
					dbl++
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if ok != 1 || dbl != 2 {
			t.Fatalf("releases: %d ok, %d rejected", ok, dbl)
		}
	}
}

// TestHandoffReadOnly: a Buf of a single-goroutine pool may be read (Bytes,
// Len, Slice) on another goroutine while the owner keeps cloning and
// releasing references to the same item; the Release of the handed-off
// reference happens back on the owner. Run with -race, in both builds.
func TestHandoffReadOnly(t *testing.T) {
	p := memtest.NewPool(t)
	b := mustAlloc(t, p, 4096)
	for i := range b.Bytes() {
		b.Bytes()[i] = byte(i)
	}
	toWorker, back := make(chan mem.Buf), make(chan mem.Buf)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for h := range toWorker {
			s := h.Slice(100, 200)
			for i, v := range s.Bytes() {
				if v != byte(100+i) {
					t.Errorf("byte %d = %d", 100+i, v)
					break
				}
			}
			back <- h
		}
	}()
	for range 200 {
		toWorker <- b.Clone()
		c := b.Clone() // the owner keeps using the item meanwhile
		if r, ok := mem.Recover(b.Bytes()[10:20]); ok {
			release(t, r)
		}
		release(t, c)
		release(t, <-back)
	}
	close(toWorker)
	<-done
	release(t, b)
}
