package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// shmPair is an RPC server and client over datapath/shm in this process.
// The server answers request type 1 (a 4-byte size n) with the first n
// bytes of a buffer of its shared space, sent zero-copy (a BufMsg) when n
// is above rpc.SmallCopyMax.
type shmPair struct {
	space           *mem.Space
	vals            *mem.Pool
	val             mem.Buf
	srvNx, cliNx    *rpc.Nexus
	srv, cli        *rpc.Endpoint
	srvDP, cliDP    *shm.Endpoint
	sess            rpc.Session
	stop            context.CancelFunc
	done            chan error
	srvStats        rpc.Stats
	srvShm, cliShm  shm.Stats
	closed, srvDone bool
}

const shmValLen = 48 << 10

func newShmPair(t *testing.T, maxPayload int, cliCfg rpc.EndpointConfig) *shmPair {
	t.Helper()
	p := &shmPair{done: make(chan error, 1)}
	var err error
	if p.space, err = mem.NewSpace(mem.SpaceConfig{Size: 64 << 20, Shared: true}); err != nil {
		t.Fatal(err)
	}
	if p.vals, err = mem.NewPool(mem.PoolConfig{Name: "values", Space: p.space}); err != nil {
		t.Fatal(err)
	}
	if p.val, err = p.vals.Alloc(shmValLen); err != nil {
		t.Fatal(err)
	}
	for i, b := 0, p.val.Bytes(); i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	p.srvNx, _ = rpc.NewNexus(rpc.NexusConfig{})
	p.cliNx, _ = rpc.NewNexus(rpc.NexusConfig{})
	if err := p.srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
		n := int(binary.LittleEndian.Uint32(r.Data()))
		_ = r.Respond(rpc.BufMsg(p.val.Clone().Slice(0, n)))
	}); err != nil {
		t.Fatal(err)
	}
	open := func(spaces ...*mem.Space) *shm.Endpoint {
		ep, err := shm.Open(datapath.Config{MaxPayload: maxPayload, Options: shm.Options{Spaces: spaces}})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	p.srvDP, p.cliDP = open(p.space), open()
	if p.srv, err = p.srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: p.srvDP}); err != nil {
		t.Fatal(err)
	}
	cliCfg.ID, cliCfg.Datapath = 2, p.cliDP
	if p.cli, err = p.cliNx.NewEndpoint(cliCfg); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	go func() { p.done <- p.srv.Run(ctx) }()
	if p.sess, err = p.cli.Connect(p.srvNx.Addr(), 1); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.cli.WaitConnected(wctx, p.sess); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close(t) })
	return p
}

func sizeReq(n int) rpc.Msg {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(n))
	return rpc.BytesMsg(b[:])
}

// call enqueues a request for n bytes and runs the client loop until its
// continuation ran (bounded).
func (p *shmPair) call(t *testing.T, n int, cont func(*rpc.Response)) {
	t.Helper()
	done := false
	if err := p.cli.Enqueue(p.sess, 1, sizeReq(n), func(r *rpc.Response) { done = true; cont(r) }); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !done {
		if time.Now().After(deadline) {
			t.Fatalf("no response for %d bytes", n)
		}
		if err := p.cli.RunOnce(); err != nil {
			t.Fatal(err)
		}
	}
}

// stopServer ends the server's loop and reads its counters.
func (p *shmPair) stopServer(t *testing.T) {
	t.Helper()
	if p.srvDone {
		return
	}
	p.srvDone = true
	p.stop()
	if err := <-p.done; err != context.Canceled {
		t.Errorf("server loop: %v", err)
	}
	p.srvStats, p.srvShm = p.srv.Stats(), p.srvDP.ShmStats()
}

func (p *shmPair) close(t *testing.T) {
	if p.closed {
		return
	}
	p.closed = true
	p.cliShm = p.cliDP.ShmStats()
	if err := p.cli.Close(); err != nil {
		t.Errorf("client close: %v", err)
	}
	p.stopServer(t)
	if err := p.srv.Close(); err != nil {
		t.Errorf("server close: %v", err)
	}
	_ = p.cliNx.Close()
	_ = p.srvNx.Close()
	_ = p.val.Release()
	if n := p.vals.InUse(); n != 0 {
		t.Errorf("values pool: %d buffers still in use", n)
	}
	_ = p.vals.Close()
	_ = p.space.Close()
}

// A response with a zero-copy entry that fits in one packet is delivered
// in place: Segments alias the server's shared memory, Data and Retain
// copy it, a clone of Hold keeps the server's slot and reference until it
// is released, and the accounting of both sides returns to zero.
func TestShmResponseInPlace(t *testing.T) {
	p := newShmPair(t, 0, rpc.EndpointConfig{})
	want := p.val.Bytes()
	var kept []mem.Buf
	for _, n := range []int{rpc.SmallCopyMax + 1, 2048, 4096, shmValLen} {
		p.call(t, n, func(r *rpc.Response) {
			if r.Err != nil {
				t.Fatalf("%d: %v", n, r.Err)
			}
			segs, hold := r.Segments()
			if segs == nil || hold.IsZero() {
				t.Fatalf("%d bytes: not received in place", n)
			}
			var got []byte
			for _, s := range segs {
				got = append(got, s...)
			}
			if !bytes.Equal(got, want[:n]) {
				t.Fatalf("%d bytes: segments differ", n)
			}
			if len(segs) < 2 || len(segs[0]) != 0 || &segs[1][0] == &want[0] {
				// The value is the server's buffer, mapped read-only
				// here at another address (not this process's own
				// mapping of the space).
				t.Fatalf("%d bytes: %d segments, head %d bytes", n, len(segs), len(segs[0]))
			}
			if !bytes.Equal(r.Data(), want[:n]) {
				t.Fatalf("%d bytes: Data differs", n)
			}
			b := r.Retain()
			if !bytes.Equal(b.Bytes(), want[:n]) {
				t.Fatalf("%d bytes: Retain differs", n)
			}
			_ = b.Release()
			kept = append(kept, hold.Clone())
		})
	}
	// Copied responses: contiguous as before.
	p.call(t, 10, func(r *rpc.Response) {
		if segs, _ := r.Segments(); segs != nil || !bytes.Equal(r.Data(), want[:10]) {
			t.Fatalf("small response: segments %d, data %x", len(segs), r.Data())
		}
	})
	// Call returns a copy in the client's pool.
	b, err := p.cli.Call(context.Background(), p.sess, 1, sizeReq(3000))
	if err != nil || !bytes.Equal(b.Bytes(), want[:3000]) {
		t.Fatalf("Call: %v", err)
	}
	_ = b.Release()
	cs := p.cli.Stats()
	if cs.RxInPlace != 5 || cs.RxInPlaceGathered != 5 || cs.RxGathered != 0 {
		t.Fatalf("client: %d in place (%d gathered), %d gathered at receive; want 5 (5), 0", cs.RxInPlace, cs.RxInPlaceGathered, cs.RxGathered)
	}
	if held := p.cliDP.ShmStats().RxHeld; held != len(kept) {
		t.Fatalf("client holds %d server packets, want %d (the kept clones)", held, len(kept))
	}
	for _, k := range kept {
		_ = k.Release()
	}
	if err := p.cli.RunOnce(); err != nil { // notices the releases, posts the completions
		t.Fatal(err)
	}
	if held := p.cliDP.ShmStats().RxHeld; held != 0 {
		t.Fatalf("client holds %d server packets after release", held)
	}
	// The server reaps the completions before it receives the next request.
	p.call(t, 10, func(*rpc.Response) {})
	p.stopServer(t)
	if p.srvShm.TxZeroCopyHeld != 0 {
		t.Fatalf("server: %d zero-copy bytes still held by the client", p.srvShm.TxZeroCopyHeld)
	}
	if p.srvShm.ZeroCopyEntries < 5 {
		t.Fatalf("server sent %d zero-copy entries, want >= 5", p.srvShm.ZeroCopyEntries)
	}
}

// TestShmHeldSend: the server's datapath reads a zero-copy response's own
// references (datapath.HeldSender) instead of cloning them: while the
// client holds four responses, the value has one reference per response
// message besides its owner's (a message the next request on its slot
// buried lives until its send completes), none per send in flight;
// everything is released when the sessions go away.
func TestShmHeldSend(t *testing.T) {
	p := newShmPair(t, 0, rpc.EndpointConfig{})
	var kept []mem.Buf
	for range 4 {
		p.call(t, 4096, func(r *rpc.Response) {
			if _, hold := r.Segments(); !hold.IsZero() {
				kept = append(kept, hold.Clone())
			}
		})
	}
	p.stopServer(t) // the server's loop is done: its counts are ours to read
	if len(kept) != 4 {
		t.Fatalf("%d responses in place, want 4", len(kept))
	}
	if refs := p.val.Refs(); refs != 1+4 {
		t.Fatalf("value refs %d while the client holds 4 responses: want 5 (owner + 4 messages, no datapath clones)", refs)
	}
	for _, k := range kept {
		_ = k.Release()
	}
	p.close(t) // checks the values pool is back to zero
}

// A zero-copy response larger than a packet, and every response with
// ContiguousRecv, is gathered: the same bytes, no response in place.
func TestShmResponseGathered(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxPayload int
		cfg        rpc.EndpointConfig
		n          int
	}{
		{"multi-packet", 16 << 10, rpc.EndpointConfig{}, 40 << 10},
		{"contiguous", 0, rpc.EndpointConfig{ContiguousRecv: true}, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newShmPair(t, tc.maxPayload, tc.cfg)
			for i := 0; i < 3; i++ {
				p.call(t, tc.n, func(r *rpc.Response) {
					if segs, _ := r.Segments(); r.Err != nil || segs != nil || !bytes.Equal(r.Data(), p.val.Bytes()[:tc.n]) {
						t.Fatalf("%v, %d segments", r.Err, len(segs))
					}
				})
			}
			cs := p.cli.Stats()
			if cs.RxInPlace != 0 {
				t.Fatalf("%d responses in place", cs.RxInPlace)
			}
			if tc.maxPayload != 0 && cs.RxGathered == 0 {
				t.Fatal("no packet gathered")
			}
		})
	}
}

// A client reads a 2 KiB value in the server's memory over datapath/shm.
func ExampleResponse_Segments() {
	// The server's values live in a shared space registered with its shm
	// endpoint: the client maps it read-only and reads them in place.
	space, _ := mem.NewSpace(mem.SpaceConfig{Size: 16 << 20, Shared: true})
	defer space.Close()
	vals, _ := mem.NewPool(mem.PoolConfig{Name: "values", Space: space})
	defer vals.Close()
	val, _ := vals.AllocCopy(bytes.Repeat([]byte{'v'}, 2048))
	defer val.Release()

	srvNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	defer srvNx.Close()
	_ = srvNx.Register(1, rpc.Dispatch, func(r *rpc.Request) {
		_ = r.Respond(rpc.BufMsg(val.Clone())) // zero-copy: a descriptor
	})
	srvDP, _ := shm.Open(datapath.Config{Options: shm.Options{Spaces: []*mem.Space{space}}})
	srv, _ := srvNx.NewEndpoint(rpc.EndpointConfig{ID: 1, Datapath: srvDP})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()

	cliNx, _ := rpc.NewNexus(rpc.NexusConfig{})
	defer cliNx.Close()
	cliDP, _ := shm.Open(datapath.Config{})
	cli, _ := cliNx.NewEndpoint(rpc.EndpointConfig{ID: 2, Datapath: cliDP})
	s, _ := cli.Connect(srvNx.Addr(), 1)
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitConnected(wctx, s); err != nil {
		fmt.Println(err)
		return
	}
	got := false
	_ = cli.Enqueue(s, 1, rpc.BytesMsg(nil), func(r *rpc.Response) {
		got = true
		segs, _ := r.Segments() // the server's memory, valid in this continuation
		fmt.Println(len(segs), len(segs[0]), len(segs[1]), string(segs[1][:4]))
	})
	for deadline := time.Now().Add(10 * time.Second); !got && time.Now().Before(deadline); {
		_ = cli.RunOnce()
	}
	_ = cli.Close()
	stop()
	<-done
	_ = srv.Close()
	// Output: 2 0 2048 vvvv
}
