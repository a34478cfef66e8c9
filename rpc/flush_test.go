package rpc_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// flushLog records how many packets each Flush of a datapath sent, and the
// size of the receive batch it followed.
type flushLog struct {
	datapath.Endpoint
	queued  int
	lastRx  int   // packets of the latest non-empty Recv
	flushes []int // packets sent by each flush that sent any, after a Recv of more than 16
}

func (f *flushLog) Send(dst netip.AddrPort, p []byte) error {
	f.queued++
	return f.Endpoint.Send(dst, p)
}

func (f *flushLog) SendSegments(dst netip.AddrPort, head []byte, segs []mem.Buf) error {
	f.queued++
	return f.Endpoint.SendSegments(dst, head, segs)
}

func (f *flushLog) Recv(pkts []datapath.Packet) (int, error) {
	n, err := f.Endpoint.Recv(pkts)
	if n > 0 {
		f.lastRx = n
	}
	return n, err
}

func (f *flushLog) Flush() error {
	if f.queued > 0 && f.lastRx > 16 {
		f.flushes = append(f.flushes, f.queued)
	}
	f.queued = 0
	return f.Endpoint.Flush()
}

// A server endpoint that receives a batch of 32 small requests sends the
// answers of every FlushEvery of them as soon as they are ready (two sends
// of 16 with the default) instead of once at the end of the batch (one
// send of 32 with FlushEvery < 0); every request is answered once either
// way.
func TestFlushEverySplitsReceiveBatches(t *testing.T) {
	for _, tc := range []struct {
		every int
		want  string
	}{
		{0, "[16 16]"},
		{8, "[8 8 8 8]"},
		{-1, "[32]"},
	} {
		t.Run(fmt.Sprint(tc.every), func(t *testing.T) {
			o := opts{net: memnet.NewNetwork(memnet.NetworkConfig{Seed: 5})}
			var log *flushLog
			so := o
			so.ep.FlushEvery = tc.every
			so.wrap = func(dp datapath.Endpoint) datapath.Endpoint {
				log = &flushLog{Endpoint: dp}
				return log
			}
			c := &counter{}
			srv := newNode(t, so, 1, echoHandlers, c)
			t.Cleanup(func() { c.check(t) })
			cli := newNode(t, o, 2, nil, nil)
			var sess []rpc.Session
			for range 32 / rpc.DefaultWindow {
				s, err := cli.ep.Connect(srv.nx.Addr(), 1)
				if err != nil {
					t.Fatal(err)
				}
				sess = append(sess, s)
			}
			both := func(cond func() bool) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); !cond(); {
					if time.Now().After(deadline) {
						t.Fatal("timed out")
					}
					_ = srv.ep.RunOnce()
					_ = cli.ep.RunOnce()
				}
			}
			both(func() bool {
				for _, s := range sess {
					if !cli.ep.IsConnected(s) {
						return false
					}
				}
				return true
			})
			done := 0
			for i := range 32 {
				s := sess[i%len(sess)]
				if err := cli.ep.Enqueue(s, tEcho, rpc.BytesMsg(payload(nextID(), 32)), func(r *rpc.Response) {
					if r.Err != nil {
						t.Error(r.Err)
					}
					done++
				}); err != nil {
					t.Fatal(err)
				}
			}
			// The server's one iteration receives the 32 requests together.
			if err := srv.ep.RunOnce(); err != nil {
				t.Fatal(err)
			}
			if log.lastRx != 32 {
				t.Fatalf("the server received %d requests in one batch, want 32", log.lastRx)
			}
			if got := fmt.Sprint(log.flushes); got != tc.want {
				t.Errorf("packets per send after a batch of 32: %v, want %v", got, tc.want)
			}
			both(func() bool { return done == 32 })
		})
	}
}
