package rpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

const tWakeWorker = 7

// waitCounter counts the Wait calls of the datapath under an endpoint and
// the shortest timeout asked for, and forwards Wake.
type waitCounter struct {
	datapath.Endpoint
	waits    atomic.Int64
	shortest atomic.Int64 // nanoseconds
}

func (w *waitCounter) Wait(d time.Duration) error {
	w.waits.Add(1)
	for {
		old := w.shortest.Load()
		if int64(d) >= old || w.shortest.CompareAndSwap(old, int64(d)) {
			break
		}
	}
	return w.Endpoint.Wait(d)
}

func (w *waitCounter) Wake() error {
	return w.Endpoint.(interface{ Wake() error }).Wake()
}

func (w *waitCounter) reset() {
	w.waits.Store(0)
	w.shortest.Store(int64(time.Hour))
}

// waitSleeping waits until ep's Run sleeps with a wake-up pending.
func waitSleeping(ep *rpc.Endpoint) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if rpc.Sleeping(ep) {
			return true
		}
		time.Sleep(100 * time.Microsecond)
	}
	return false
}

// An idle endpoint sleeps until its next timer instead of polling its
// mailbox, and every hand-over wakes it: worker answers (the worker waits
// until the server loop sleeps before it answers), Post from another
// goroutine, and the cancellation of Run's context.
func TestIdleWakeups(t *testing.T) {
	for _, kind := range []string{"memnet", "udp"} {
		t.Run(kind, func(t *testing.T) {
			var wc *waitCounter
			o := opts{kind: kind, ep: rpc.EndpointConfig{IdleSpin: -1}}
			if kind == "memnet" {
				o.net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 5})
			}
			so := o
			so.wrap = func(dp datapath.Endpoint) datapath.Endpoint {
				wc = &waitCounter{Endpoint: dp}
				wc.reset()
				return wc
			}
			c := &counter{}
			srv := newNode(t, so, 1, func(nx *rpc.Nexus, c *counter) {
				echoHandlers(nx, c)
				_ = nx.Register(tWakeWorker, rpc.Worker, func(r *rpc.Request) {
					c.add(r.Data())
					if !waitSleeping(r.Endpoint()) {
						_ = r.RespondBytes([]byte("server loop never slept"))
						return
					}
					_ = r.RespondBytes(r.Data())
				})
			}, c)
			srv.serve()
			cli := newNode(t, o, 2, nil, nil)
			s := cli.connect(t, srv.nx, 1)

			// Idle: every Wait asks for the safety-net sleep (100 ms), not
			// a mailbox poll (500 µs before).
			if !waitSleeping(srv.ep) {
				t.Fatal("idle server loop never slept")
			}
			wc.reset()
			time.Sleep(300 * time.Millisecond)
			if n, d := wc.waits.Load(), time.Duration(wc.shortest.Load()); n > 0 && d < 50*time.Millisecond {
				t.Errorf("idle server: %d Waits, shortest %v", n, d)
			}

			const calls = 3
			for i := 0; i < calls; i++ {
				callMany(t, cli, []rpc.Session{s}, tWakeWorker, []int{64}, 20*time.Second)
			}
			if !waitSleeping(srv.ep) {
				t.Fatal("server loop never slept")
			}
			postAndWait(t, srv.ep, 20*time.Second, "a Post to a sleeping endpoint never ran")

			// Cancelling Run's context wakes it too.
			if !waitSleeping(srv.ep) {
				t.Fatal("server loop never slept")
			}
			srv.cancel()
			select {
			case err := <-srv.done:
				if err != context.Canceled {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return after its context was cancelled")
			}
			srv.cancel = nil
			if w := srv.ep.Stats().Wakeups; w < calls+2 {
				t.Errorf("%d wake-ups, want >= %d (%d worker answers, a Post, the cancellation)", w, calls+2, calls)
			}
		})
	}
}

// Hand-overs from many goroutines to a sleeping endpoint are never lost
// (the sleeping flag and the mailbox are checked in opposite orders by the
// two sides): every Post runs.
func TestPostStorm(t *testing.T) {
	for _, kind := range []string{"memnet", "udp"} {
		t.Run(kind, func(t *testing.T) {
			o := opts{kind: kind, ep: rpc.EndpointConfig{IdleSpin: -1}}
			if kind == "memnet" {
				o.net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 6})
			}
			srv := newNode(t, o, 1, echoHandlers, &counter{})
			srv.serve()
			const goroutines, posts = 4, 200
			var ran atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < posts; i++ {
						done := make(chan struct{})
						if err := srv.ep.Post(func() { ran.Add(1); close(done) }); err != nil {
							t.Error(err)
							return
						}
						select {
						case <-done:
						case <-time.After(20 * time.Second):
							t.Error("a Post never ran")
							return
						}
						if i%16 == 0 {
							time.Sleep(time.Duration(i%7) * 50 * time.Microsecond) // let the loop fall asleep
						}
					}
				}()
			}
			wg.Wait()
			if got := ran.Load(); got != goroutines*posts {
				t.Fatalf("%d of %d posts ran", got, goroutines*posts)
			}
		})
	}
}
