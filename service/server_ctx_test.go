package service

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCallCtx: the handler's context without context.WithTimeout: Done is
// nil when nothing can end the call early, closes with DeadlineExceeded
// when the deadline passes (its timer started by Done), with Canceled at
// the call's end or on the client's cancellation of that call (not of a
// later call reusing the context); Err reports a passed deadline without
// Done.
func TestCallCtx(t *testing.T) {
	info := &MethodInfo{FullMethod: "/x.Y/Z"}
	t.Run("no deadline, not cancellable", func(t *testing.T) {
		var c callCtx
		c.start(info, time.Time{}, false)
		if c.Done() != nil || c.Err() != nil {
			t.Fatal("Done or Err of a call nothing can end")
		}
		if _, ok := c.Deadline(); ok {
			t.Fatal("a deadline")
		}
		if m, ok := MethodFromContext(&c); !ok || m != info {
			t.Fatal("method")
		}
		c.finish()
	})
	t.Run("deadline expires", func(t *testing.T) {
		var c callCtx
		dl := time.Now().Add(20 * time.Millisecond)
		c.start(info, dl, false)
		if d, ok := c.Deadline(); !ok || !d.Equal(dl) {
			t.Fatalf("deadline %v %v", d, ok)
		}
		select {
		case <-c.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("Done never closed")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err %v", c.Err())
		}
		c.finish()
	})
	t.Run("deadline passed, no Done", func(t *testing.T) {
		var c callCtx
		c.start(info, time.Now().Add(-time.Millisecond), false)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err %v", c.Err())
		}
		select {
		case <-c.Done():
		default:
			t.Fatal("Done open after the deadline")
		}
		c.finish()
	})
	t.Run("end of the call", func(t *testing.T) {
		var c callCtx
		c.start(info, time.Now().Add(time.Hour), false)
		d := c.Done()
		if c.finish() {
			t.Fatal("a context whose Done was asked for is reused")
		}
		select {
		case <-d:
		default:
			t.Fatal("Done open after the call")
		}
		if c.timer != nil || !errors.Is(c.Err(), context.Canceled) || c.Done() != d {
			t.Fatal("not ended for good")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		var f inflight
		var c callCtx
		k := inflightKey{id: 7}
		c.start(info, time.Time{}, true)
		f.add(k, &c)
		d := c.Done()
		f.cancel(k)
		select {
		case <-d:
		default:
			t.Fatal("Done open after cancel")
		}
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err %v", c.Err())
		}
		f.remove(k)
		c.finish()
	})
	t.Run("derived context", func(t *testing.T) {
		// context.WithTimeout of a handler's ctx watches it from a
		// goroutine of its own, which may look at it after the call.
		for i := 0; i < 100; i++ {
			c := new(callCtx)
			c.start(info, time.Now().Add(time.Hour), false)
			child, cancel := context.WithTimeout(c, time.Minute)
			if d, _ := child.Deadline(); d.After(time.Now().Add(2 * time.Minute)) {
				t.Fatal("child deadline")
			}
			if i%2 == 0 {
				cancel()
				c.finish()
			} else {
				c.finish()
				<-child.Done() // the end of the call reaches the child
				cancel()
			}
		}
	})
	t.Run("stale cancel", func(t *testing.T) {
		var c callCtx
		c.start(info, time.Time{}, true)
		gen := c.gen
		if !c.finish() {
			t.Fatal("not reused")
		}
		c.start(info, time.Time{}, true) // the next call
		c.cancel(gen)
		if c.Err() != nil {
			t.Fatalf("a later call cancelled: %v", c.Err())
		}
		c.finish()
	})
}
