package service_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestZeroCopyRequest: a request field in registered memory goes out as a
// zero-copy entry (the client takes its own reference on the entry the
// serializer lends it, so the caller's buffer can be released at once),
// comes back intact, and every buffer returns to its pool.
func TestZeroCopyRequest(t *testing.T) {
	l := newLockstep(t, false)
	cl := typedpb.NewEchoClient(l.c)
	p := memtest.NewPool(t, mem.PoolConfig{Name: "zc-req", Concurrent: true})
	const n = 8192
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + 3)
	}
	release := service.LeadHere(l.c)
	defer release()
	zc0 := l.cliEp.Stats().Datapath.ZeroCopyBytes
	for round := 0; round < 3; round++ {
		buf, err := p.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		copy(buf.Bytes(), want)
		a := wire.NewArena()
		req := typedpb.NewBlob(a)
		req.SetDataBuf(buf)
		if err := buf.Release(); err != nil { // the arena holds its own reference
			t.Fatal(err)
		}
		var got []byte
		var gerr error
		done := false
		if err := cl.EchoAsync(context.Background(), a, req, func(r *typedpb.Blob, err error) {
			done, gerr = true, err
			if err == nil {
				got = append([]byte(nil), r.GetData()...)
			}
		}); err != nil {
			t.Fatal(err)
		}
		for i := 0; !done && i < 1e6; i++ {
			l.step(t)
		}
		if !done || gerr != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d: done %v, err %v, %d bytes back (equal %v)", round, done, gerr, len(got), bytes.Equal(got, want))
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	if zc := l.cliEp.Stats().Datapath.ZeroCopyBytes - zc0; zc < 3*n {
		t.Fatalf("the client sent %d bytes zero-copy, want >= %d", zc, 3*n)
	}
	for i := 0; i < 1000 && p.InUse() != 0; i++ {
		l.step(t) // the datapath releases its references when the sends complete
	}
	if n := p.InUse(); n != 0 {
		t.Fatalf("%d request buffers still in use", n)
	}
}

// TestAsyncCallRequestSizes: one reusable call (the fast path of
// AsyncCall.Start after the first request binds) sends requests whose
// serialized head grows past the call's buffer (copied data of 0 B to
// 64 KiB, then smaller again) interleaved with zero-copy requests from
// registered memory; every echo comes back intact and every request
// buffer returns to its pool.
func TestAsyncCallRequestSizes(t *testing.T) {
	l := newLockstep(t, false)
	cl := typedpb.NewEchoClient(l.c)
	p := memtest.NewPool(t, mem.PoolConfig{Name: "sizes-req", Concurrent: true})
	release := service.LeadHere(l.c)
	defer release()
	a := wire.NewArena()
	var got []byte
	var gerr error
	done := false
	call := cl.NewEchoCall(a, func(r *typedpb.Blob, err error) {
		done, gerr = true, err
		got = nil
		if err == nil {
			got = append([]byte(nil), r.GetData()...)
		}
	})
	for round, n := range []int{0, 1, 100, 5000, 2, 65536, 300, 9000, 0, 40} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*13 + round)
		}
		req := typedpb.NewBlob(a)
		zeroCopy := round%3 == 2 && n > 0
		if zeroCopy {
			buf, err := p.Alloc(n)
			if err != nil {
				t.Fatal(err)
			}
			copy(buf.Bytes(), want)
			req.SetDataBuf(buf)
			if err := buf.Release(); err != nil { // the arena holds its own reference
				t.Fatal(err)
			}
		} else {
			req.SetData(want)
		}
		done = false
		if err := call.Start(context.Background(), req); err != nil {
			t.Fatalf("round %d (%d bytes): %v", round, n, err)
		}
		for i := 0; !done && i < 1e6; i++ {
			l.step(t)
		}
		if !done || gerr != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d (%d bytes, zero-copy %v): done %v, err %v, %d bytes back (equal %v)",
				round, n, zeroCopy, done, gerr, len(got), bytes.Equal(got, want))
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 1000 && p.InUse() != 0; i++ {
		l.step(t)
	}
	if n := p.InUse(); n != 0 {
		t.Fatalf("%d request buffers still in use", n)
	}
}
