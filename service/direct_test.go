package service_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	"github.com/cornflakes-go/cornflakes/wire"
)

// directCounts counts how the calls of directDesc's method were served.
type directCounts struct {
	binds, direct, notBorrowed, buf atomic.Int32
}

// directDesc is the generated Echo_ServiceDesc with its Direct (the
// generated binding) and BufHandler wrapped to count their calls.
func directDesc(c *directCounts) *service.ServiceDesc {
	d := typedpb.Echo_ServiceDesc
	d.Methods = append([]service.MethodDesc(nil), d.Methods...)
	genBind, genBuf := d.Methods[0].Direct, d.Methods[0].BufHandler
	d.Methods[0].Direct = func(impl any) service.MethodDirect {
		c.binds.Add(1)
		dh := genBind(impl)
		if dh == nil {
			return nil
		}
		return func(ctx context.Context, a *wire.Arena, in mem.Buf, keep *service.DirectKeep) (service.DirectResponse, error) {
			c.direct.Add(1)
			if !a.BorrowInput {
				c.notBorrowed.Add(1)
			}
			return dh(ctx, a, in, keep)
		}
	}
	d.Methods[0].BufHandler = func(srv any, ctx context.Context, a *wire.Arena, in mem.Buf, ic service.UnaryServerInterceptor, info *service.MethodInfo) (wire.Object, error) {
		c.buf.Add(1)
		return genBuf(srv, ctx, a, in, ic, info)
	}
	return &d
}

// TestDirectServesCommonPath: a Dispatch method with a Direct binding on
// a Server without interceptors is bound once at registration and serves
// every call of the common path (no deadline, no metadata) with its request
// borrowed: inline and multi-packet requests, a zero-copy echo, an empty
// request, an application error and a panic (Internal) all answer right;
// calls with a deadline take the general path (BufHandler). In the checked
// build every call arena's Reset verifies the borrow (borrowRunDesc).
func TestDirectServesCommonPath(t *testing.T) {
	var c directCounts
	echoes := borrowRunDesc(t, new(borrowEcho), directDesc(&c), rpc.Dispatch)
	if echoes != 15 {
		t.Errorf("%d echoes, want 15", echoes)
	}
	if n := c.binds.Load(); n != 1 {
		t.Errorf("Direct bound %d times, want 1", n)
	}
	// Per round: 6 calls without a deadline (Direct), 2 with (BufHandler).
	if n := c.direct.Load(); n != 18 {
		t.Errorf("%d Direct calls, want 18", n)
	}
	if n := c.buf.Load(); n != 6 {
		t.Errorf("%d BufHandler calls, want 6", n)
	}
	if n := c.notBorrowed.Load(); n != 0 {
		t.Errorf("%d Direct calls without BorrowInput", n)
	}
}

// TestDirectNotWithInterceptors: a Server with an interceptor never binds
// Direct (the interceptor sees every call), nor does a Worker method.
func TestDirectNotWithInterceptors(t *testing.T) {
	var c directCounts
	var seen atomic.Int32
	ic := func(ctx context.Context, req, resp any, info *service.MethodInfo, h service.UnaryHandler) error {
		seen.Add(1)
		return h(ctx, req, resp)
	}
	borrowRunDesc(t, new(borrowEcho), directDesc(&c), rpc.Dispatch, service.WithServerInterceptor(ic))
	if n := c.binds.Load(); n != 0 {
		t.Errorf("Direct bound %d times with an interceptor, want 0", n)
	}
	if n := seen.Load(); n != 24 {
		t.Errorf("the interceptor saw %d calls, want 24", n)
	}
	if n := c.buf.Load(); n != 24 {
		t.Errorf("%d BufHandler calls, want 24", n)
	}

	var w directCounts
	borrowRunDesc(t, new(borrowEcho), directDesc(&w), rpc.Worker)
	if n := w.binds.Load(); n != 0 {
		t.Errorf("Direct bound %d times for a Worker method, want 0", n)
	}
}

// TestDirectBindRefusesOtherTypes: the generated binding returns nil for
// an implementation of another interface (the Server then keeps
// BufHandler and Handler).
func TestDirectBindRefusesOtherTypes(t *testing.T) {
	if dh := typedpb.Echo_ServiceDesc.Methods[0].Direct(struct{}{}); dh != nil {
		t.Fatal("Direct bound a value that does not implement EchoServer")
	}
	if dh := typedpb.Echo_ServiceDesc.Methods[0].Direct(new(borrowEcho)); dh == nil {
		t.Fatal("Direct refused an EchoServer")
	}
}

// TestEncodeRequestOwnTypeOnly: the generated EncodeRequest serializes the
// method's request type (the bytes of its WireSerializeSGA) and leaves any
// other message to the caller's general path (ok false, nothing written).
func TestEncodeRequestOwnTypeOnly(t *testing.T) {
	enc := typedpb.Echo_ServiceDesc.Methods[0].EncodeRequest
	if enc == nil {
		t.Fatal("no EncodeRequest generated for Echo")
	}
	a := wire.NewArena()
	defer func() { _ = a.Reset() }()
	var sga wireimpl.SGA
	other := v1.NewHelloRequest(a)
	other.SetName("x")
	if ok, err := enc(other, &sga); ok || err != nil || len(sga.Head) != 0 {
		t.Fatalf("EncodeRequest of another type: ok %v, err %v, %d bytes", ok, err, len(sga.Head))
	}
	req := typedpb.NewBlob(a)
	req.SetData([]byte("0123456789"))
	ok, err := enc(req, &sga)
	if !ok || err != nil {
		t.Fatalf("EncodeRequest of the request type: ok %v, err %v", ok, err)
	}
	var want wireimpl.SGA
	if err := req.WireSerializeSGA(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sga.Head, want.Head) || len(sga.Head) == 0 {
		t.Fatalf("EncodeRequest wrote %x, WireSerializeSGA %x", sga.Head, want.Head)
	}
}

// TestWriteRequestOwnTypeOnly: the generated WriteRequest and
// WriteResponse write the method's own type in place (the bytes of its
// WireSerializeSGA) and decline (-1) any other message, a zero-copy value
// and a dst too short.
func TestWriteRequestOwnTypeOnly(t *testing.T) {
	md := typedpb.Echo_ServiceDesc.Methods[0]
	if md.WriteRequest == nil || md.WriteResponse == nil {
		t.Fatal("no WriteRequest or WriteResponse generated for Echo")
	}
	a := wire.NewArena()
	defer func() { _ = a.Reset() }()
	dst := make([]byte, 256)
	other := v1.NewHelloRequest(a)
	other.SetName("x")
	if n := md.WriteRequest(other, dst); n != -1 {
		t.Fatalf("WriteRequest of another type: %d", n)
	}
	if n := md.WriteResponse(other, dst); n != -1 {
		t.Fatalf("WriteResponse of another type: %d", n)
	}
	req := typedpb.NewBlob(a)
	req.SetData([]byte("0123456789"))
	var want wireimpl.SGA
	if err := req.WireSerializeSGA(&want); err != nil {
		t.Fatal(err)
	}
	for _, w := range []func(*typedpb.Blob, []byte) int{
		func(x *typedpb.Blob, d []byte) int { return md.WriteRequest(x, d) },
		func(x *typedpb.Blob, d []byte) int { return md.WriteResponse(x, d) },
	} {
		n := w(req, dst)
		if n != len(want.Head) || !bytes.Equal(dst[:n], want.Head) {
			t.Fatalf("wrote %d bytes %x, WireSerializeSGA %x", n, dst[:max(n, 0)], want.Head)
		}
		if n := w(req, dst[:len(want.Head)-1]); n != -1 {
			t.Fatalf("into a short dst: %d", n)
		}
	}
	// A value in registered memory at the threshold goes zero-copy: not
	// written in place.
	p := memtest.NewPool(t)
	b := memtest.Alloc(t, p, bytes.Repeat([]byte("z"), 4096))
	defer memtest.Release(t, b)
	zc := typedpb.NewBlob(a)
	zc.SetDataBuf(b)
	var sga wireimpl.SGA
	if err := zc.WireSerializeSGA(&sga); err != nil || len(sga.Entries) != 1 {
		t.Fatalf("zero-copy Blob: %v, %d entries", err, len(sga.Entries))
	}
	if n := md.WriteRequest(zc, make([]byte, 8192)); n != -1 {
		t.Fatalf("WriteRequest of a zero-copy value: %d", n)
	}
}

// TestDirectDecodesLikeBufHandler: the generated Direct closure of a
// one-bytes-field request (its common case decoded by
// wireimpl.DecodeKeptBytes1 in the closure itself, any other input by the
// fused helper's second half) answers every input as the method's
// BufHandler does — the common request, an empty one, one whose common
// case the helper declines, every truncation of them and malformed bytes
// (InvalidArgument) — with its kept messages reused across the calls.
func TestDirectDecodesLikeBufHandler(t *testing.T) {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "direct-decode"})
	if err != nil {
		t.Fatal(err)
	}
	md := typedpb.Echo_ServiceDesc.Methods[0]
	impl := &lockstepEcho{}
	dh := md.Direct(impl)
	if dh == nil {
		t.Fatal("Direct refused the service's own implementation")
	}
	a := wire.NewArena()
	var keep service.DirectKeep
	type result struct {
		data string
		code service.Code
	}
	// run serves p with serve (a.BorrowInput set, as the Server does) and
	// resets the arena before the input is released.
	run := func(p []byte, serve func(in mem.Buf) (wire.Object, error)) result {
		var in mem.Buf
		if len(p) != 0 {
			if in, err = pool.AllocCopy(p); err != nil {
				t.Fatal(err)
			}
		}
		a.BorrowInput = true
		out, err := serve(in)
		a.BorrowInput = false
		var r result
		if err != nil {
			r.code = service.CodeOf(err)
		} else {
			r.data = string(out.(*typedpb.Blob).GetData())
		}
		if err := a.Reset(); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		if len(p) != 0 {
			if err := in.Release(); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	direct := func(in mem.Buf) (wire.Object, error) { return dh(context.Background(), a, in, &keep) }
	buf := func(in mem.Buf) (wire.Object, error) {
		return md.BufHandler(impl, context.Background(), a, in, nil, &service.MethodInfo{})
	}
	enc := func(d []byte) []byte {
		x := typedpb.NewBlob(a)
		if d != nil {
			x.SetData(d)
		}
		p, err := wire.Flatten(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		p = append([]byte(nil), p...)
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inputs := [][]byte{enc([]byte("hello, direct")), enc(nil), enc(bytes.Repeat([]byte{'x'}, 3000)), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {1}}
	for _, p := range inputs[:3] {
		for n := range p {
			inputs = append(inputs, p[:n])
		}
	}
	var invalid, ok int
	for i, p := range inputs {
		want := run(p, buf)
		got := run(p, direct)
		if got != want {
			t.Fatalf("input %d (%x): Direct %+v, BufHandler %+v", i, p, got, want)
		}
		if got.code == service.InvalidArgument {
			invalid++
		} else if got.code == service.OK {
			ok++
		}
	}
	if invalid == 0 || ok < 3 {
		t.Fatalf("%d inputs refused, %d answered: the inputs do not reach both outcomes", invalid, ok)
	}
	if keep.Req == nil || keep.Resp == nil || keep.W == nil {
		t.Fatalf("kept messages (and the response's writer) not kept: %+v", keep)
	}
}

// TestDirectResponseWriter: the in-place writer the generated Direct
// binding keeps for a one-bytes-field response (DirectKeep.W) writes the
// OK status header and the response it returned, and declines (-1) a
// record too small for them or a response with a zero-copy value.
func TestDirectResponseWriter(t *testing.T) {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "direct-writer"})
	if err != nil {
		t.Fatal(err)
	}
	dh := typedpb.Echo_ServiceDesc.Methods[0].Direct(&lockstepEcho{})
	a := wire.NewArena()
	var keep service.DirectKeep
	for _, d := range [][]byte{[]byte("0123456789abcdef"), bytes.Repeat([]byte{'z'}, 1500)} {
		x := typedpb.NewBlob(a)
		x.SetData(d)
		p, err := wire.Flatten(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		in, err := pool.AllocCopy(p)
		if err != nil {
			t.Fatal(err)
		}
		a.BorrowInput = true
		out, err := dh(context.Background(), a, in, &keep)
		a.BorrowInput = false
		if err != nil {
			t.Fatal(err)
		}
		if keep.W == nil {
			t.Fatal("no response writer kept")
		}
		want := make([]byte, service.StatusOKLen)
		service.PutStatusOK(want)
		want, err = wire.Flatten(out, want)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, len(want)+16)
		n := keep.W.WriteInline(dst)
		sz := out.Sizes()
		switch {
		case sz.Entries != 0 && n != -1:
			t.Fatalf("%d bytes: a response with zero-copy entries written in place (%d)", len(d), n)
		case sz.Entries == 0 && !bytes.Equal(dst[:max(n, 0)], want):
			t.Fatalf("%d bytes: wrote %d bytes %x, want %x", len(d), n, dst[:max(n, 0)], want)
		}
		if n := keep.W.WriteInline(dst[:service.StatusOKLen]); n != -1 {
			t.Fatalf("a record of the header's length only: %d, want -1", n)
		}
		if n := keep.W.WriteInline(dst[:len(want)-1]); sz.Entries == 0 && n != -1 {
			t.Fatalf("a record one byte short: %d, want -1", n)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := in.Release(); err != nil {
			t.Fatal(err)
		}
	}
}
