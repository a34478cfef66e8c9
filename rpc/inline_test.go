package rpc_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/kv/kvpb"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestInlineMessages: bodies of at most rpc.InlineMax bytes (a BytesMsg,
// or an object without zero-copy fields) travel from the endpoint's own
// record of the message, without a buffer of the client's pool, and
// arrive intact on both sides of the boundary.
func TestInlineMessages(t *testing.T) {
	for _, kind := range []string{"memnet", "udp"} {
		t.Run(kind, func(t *testing.T) {
			cli, srv, _ := newPair(t, opts{kind: kind})
			// Objects are echoed by a handler that does not count ids (their
			// first bytes are the header, the same for every request).
			if err := srv.nx.Register(tObj, rpc.Dispatch, func(r *rpc.Request) { _ = r.RespondBytes(r.Data()) }); err != nil {
				t.Fatal(err)
			}
			s := cli.connect(t, srv.nx, 1)
			// The client's pool buffers a request holds right after
			// Enqueue: its own body's (none when inline) and the datapath's
			// for the packet in flight (memnet), the same for every size
			// here (one packet each).
			inUse := func() int { return cli.ep.Pool().Stats().InUse }
			var heldInline, heldPool []int
			for _, n := range []int{0, 1, rpc.InlineMax - 1, rpc.InlineMax, rpc.InlineMax + 1, 1000} {
				want := payload(nextID(), n)[:n]
				before := inUse()
				var got []byte
				done := false
				err := cli.ep.Enqueue(s, tEcho, rpc.BytesMsg(want), func(r *rpc.Response) {
					done = true
					if r.Err != nil {
						t.Errorf("%d bytes: %v", n, r.Err)
						return
					}
					got = append([]byte{}, r.Data()...)
				})
				if err != nil {
					t.Fatal(err)
				}
				if held := inUse() - before; n <= rpc.InlineMax {
					heldInline = append(heldInline, held)
				} else {
					heldPool = append(heldPool, held)
				}
				cli.runUntil(t, 10*time.Second, func() bool { return done })
				if !bytes.Equal(got, want) {
					t.Fatalf("%d bytes: echo mismatch", n)
				}
			}

			for _, h := range heldInline {
				if h != heldPool[0]-1 || heldPool[1] != heldPool[0] {
					t.Fatalf("pool buffers held by requests in flight: %v inline, %v over InlineMax; want one fewer inline", heldInline, heldPool)
				}
			}

			// Objects: a small one with copied fields only goes inline,
			// one over the limit into a pool buffer.
			var heldObj []int
			a := wire.NewArena()
			defer a.Reset()
			for _, keyLen := range []int{8, 2 * rpc.InlineMax} {
				req := kvpb.NewReq(a)
				key := bytes.Repeat([]byte("k"), keyLen)
				req.InitKeys(1).Append(key)
				sz := req.Sizes()
				before := inUse()
				var got []byte
				done := false
				err := cli.ep.Enqueue(s, tObj, rpc.ObjectMsg(req), func(r *rpc.Response) {
					done = true
					if r.Err == nil {
						got = append([]byte{}, r.Data()...)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				heldObj = append(heldObj, inUse()-before)
				if (sz.Total() <= rpc.InlineMax) != (keyLen == 8) {
					t.Fatalf("object sizes %+v: the test's small object must fit InlineMax, the large one not", sz)
				}
				cli.runUntil(t, 10*time.Second, func() bool { return done })
				dec := kvpb.NewReq(a)
				if err := dec.DecodeBytes(got); err != nil {
					t.Fatalf("decoding the echoed object: %v", err)
				}
				keys, err := dec.GetKeys()
				if err != nil || keys.Len() != 1 || !bytes.Equal(keys.At(0), key) {
					t.Fatalf("echoed object: keys %v, %v", keys, err)
				}
			}
			if heldObj[0] != heldObj[1]-1 {
				t.Errorf("pool buffers held by objects in flight: %v (inline, over InlineMax); want one fewer inline", heldObj)
			}
		})
	}
}

// BenchmarkSmallRPCBody is BenchmarkSmallRPC (memnet) with the 32-byte
// request body sent each way a user can: copied inline (BytesMsg), a
// reference on a registered buffer (BufMsg of a Clone), or a Cornflakes
// object with copied fields only (ObjectMsg).
func BenchmarkSmallRPCBody(b *testing.B) {
	for _, how := range []string{"bytes", "buf", "object"} {
		b.Run(how, func(b *testing.B) { benchSmallRPCMsg(b, "memnet", 4, 32, rpc.CCConfig{}, how) })
	}
}

// TestNewEndpointReserves: a new endpoint commits one region of each pool
// class a small message uses (above InlineMax up to ReservedClassMax, and
// the preallocated responses'), so that no first message of a size waits
// for the pool to grow; NoReserve leaves the pool as it was.
func TestNewEndpointReserves(t *testing.T) {
	for _, noReserve := range []bool{false, true} {
		nx, err := rpc.NewNexus(rpc.NexusConfig{})
		if err != nil {
			t.Fatal(err)
		}
		pool := memtest.NewPool(t, mem.PoolConfig{Name: t.Name()})
		dp, err := memnet.NewNetwork(memnet.NetworkConfig{}).Open(datapath.Config{}, memnet.Options{}) // its own pool
		if err != nil {
			t.Fatal(err)
		}
		ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: dp, Pool: pool, NoReserve: noReserve, PreRespSize: 900})
		if err != nil {
			t.Fatal(err)
		}
		committed := map[int]bool{}
		for _, c := range pool.Stats().Classes {
			committed[c.Size] = c.Regions > 0
		}
		for size := 2 * rpc.InlineMax; size <= rpc.ReservedClassMax; size *= 2 {
			if committed[size] == noReserve {
				t.Errorf("NoReserve %v: class %d committed %v", noReserve, size, committed[size])
			}
		}
		if committed[rpc.InlineMax] || committed[2*rpc.ReservedClassMax] {
			t.Errorf("NoReserve %v: classes outside the range committed: %v", noReserve, committed)
		}
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
		if err := nx.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
