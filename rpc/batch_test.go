package rpc_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/rpc"
)

// A batch queues the requests enqueued from outside the loop and sends them at
// EndBatch (or at the next RunOnce, which ends the batch): nothing leaves before,
// and every request is answered after.
func TestBatchSendsAtEnd(t *testing.T) {
	for _, end := range []string{"EndBatch", "RunOnce"} {
		t.Run(end, func(t *testing.T) {
			cli, srv, _ := newPair(t, opts{})
			s := cli.connect(t, srv.nx, 1)
			tx0 := cli.ep.Stats().Datapath.TxPackets
			if err := cli.ep.BeginBatch(); err != nil {
				t.Fatal(err)
			}
			const n = 6
			pending := 0
			var firstErr error
			for i := range n {
				want := payload(nextID(), 64+i)
				pending++
				err := cli.ep.Enqueue(s, tEcho, rpc.BytesMsg(want), func(r *rpc.Response) {
					pending--
					if r.Err == nil && !bytes.Equal(r.Data(), want) {
						r.Err = errors.New("echo mismatch")
					}
					if r.Err != nil && firstErr == nil {
						firstErr = r.Err
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if tx := cli.ep.Stats().Datapath.TxPackets - tx0; tx != 0 {
				t.Fatalf("%d packets sent inside the batch, want 0", tx)
			}
			if end == "EndBatch" {
				if err := cli.ep.EndBatch(); err != nil {
					t.Fatal(err)
				}
				if tx := cli.ep.Stats().Datapath.TxPackets - tx0; tx == 0 {
					t.Fatal("EndBatch sent nothing")
				}
			}
			cli.runUntil(t, 10*time.Second, func() bool { return pending == 0 })
			if firstErr != nil {
				t.Fatal(firstErr)
			}
			// The batch is over: the next Enqueue sends at once.
			tx1 := cli.ep.Stats().Datapath.TxPackets
			done := false
			if err := cli.ep.Enqueue(s, tEcho, rpc.BytesMsg(payload(nextID(), 32)), func(*rpc.Response) { done = true }); err != nil {
				t.Fatal(err)
			}
			if cli.ep.Stats().Datapath.TxPackets == tx1 {
				t.Fatal("an Enqueue after the batch did not send at once")
			}
			cli.runUntil(t, 10*time.Second, func() bool { return done })
		})
	}
}

// A continuation cannot start a batch (its Enqueue calls are the loop's).
func TestBatchFromCallbackIsReentrant(t *testing.T) {
	cli, srv, _ := newPair(t, opts{})
	s := cli.connect(t, srv.nx, 1)
	var got error
	done := false
	if err := cli.ep.Enqueue(s, tEcho, rpc.BytesMsg(payload(nextID(), 8)), func(*rpc.Response) {
		got = cli.ep.BeginBatch()
		done = true
	}); err != nil {
		t.Fatal(err)
	}
	cli.runUntil(t, 10*time.Second, func() bool { return done })
	if !errors.Is(got, rpc.ErrReentrant) {
		t.Fatalf("BeginBatch from a continuation: %v, want ErrReentrant", got)
	}
}
