package rpc_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc"
)

const (
	tTail       = 30 // dispatch: BorrowedTail checked against InputBuf, then echoed
	tTailWorker = 31 // worker: BorrowedTail declines
)

// TestBorrowedTail: for a dispatch request in the receive batch,
// BorrowedTail(n) is the window of InputBuf's last n bytes (the same
// bytes, on the same reference), for every n; for a request copied out of
// the batch (multi-packet, CopyRequests) and for a worker's it declines
// and returns the zero Buf. Both kinds must be seen.
func TestBorrowedTail(t *testing.T) {
	for _, copyReq := range []bool{false, true} {
		t.Run(fmt.Sprintf("CopyRequests=%v", copyReq), func(t *testing.T) {
			cli, srv, _ := newPair(t, opts{maxPayload: 1500, ep: rpc.EndpointConfig{RTO: 2 * time.Millisecond, CopyRequests: copyReq}})
			var e inlineErrs // inl counts borrowed requests, bytes the others
			check := func(r *rpc.Request, worker bool) {
				d := r.Data()
				borrowed := 0
				for n := 1; n <= len(d); n++ {
					b, ok := r.BorrowedTail(n)
					if !ok {
						if !b.IsZero() {
							e.add(fmt.Errorf("BorrowedTail(%d) declined with a Buf", n))
						}
						continue
					}
					if worker {
						e.add(fmt.Errorf("worker: BorrowedTail(%d) did not decline", n))
					}
					borrowed++
					in := r.InputBuf()
					want := in.Slice(in.Len()-n, n)
					if !bytes.Equal(b.Bytes(), d[len(d)-n:]) || !bytes.Equal(b.Bytes(), want.Bytes()) ||
						&b.Bytes()[0] != &d[len(d)-n] {
						e.add(fmt.Errorf("BorrowedTail(%d) of %d bytes: not the request's own tail", n, len(d)))
					}
				}
				e.mu.Lock()
				if borrowed > 0 {
					if borrowed != len(d) {
						e.errs = append(e.errs, fmt.Errorf("BorrowedTail: %d of %d lengths borrowed", borrowed, len(d)))
					}
					e.inl++
				} else {
					e.bytes++
				}
				e.mu.Unlock()
			}
			if err := srv.nx.Register(tTail, rpc.Dispatch, func(r *rpc.Request) { check(r, false); _ = r.RespondBytes(r.Data()) }); err != nil {
				t.Fatal(err)
			}
			if err := srv.nx.Register(tTailWorker, rpc.Worker, func(r *rpc.Request) { check(r, true); _ = r.RespondBytes(r.Data()) }); err != nil {
				t.Fatal(err)
			}
			s := cli.connect(t, srv.nx, 1)
			sizes := []int{8, 9, 32, 100, 1000, 1400, 3000, 5000}
			callMany(t, cli, []rpc.Session{s}, tTail, sizes, 60*time.Second)
			callMany(t, cli, []rpc.Session{s}, tTailWorker, sizes, 60*time.Second)
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, err := range e.errs {
				t.Error(err)
			}
			if (e.inl == 0) != copyReq || e.bytes == 0 {
				t.Fatalf("%d borrowed and %d other requests (CopyRequests %v)", e.inl, e.bytes, copyReq)
			}
		})
	}
}
