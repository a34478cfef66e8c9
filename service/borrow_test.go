package service_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
)

// borrowEcho is the Echo service with a MethodBufHandler (what generated
// code would provide), recording how each request was served. Its method
// answers by the request's first byte: 'E' an error, 'P' a panic, 'D' an
// error unless the call has a deadline; anything else is echoed (a long
// request as a zero-copy field of the request set into the response).
type borrowEcho struct {
	typedpb.UnimplementedEchoServer
	bufCalls, byteCalls atomic.Int32
	notBorrowed         atomic.Int32 // BufHandler calls without a.BorrowInput set
	held                atomic.Int32 // calls whose arena held a reference after the borrowed decode
}

func (s *borrowEcho) Echo(ctx context.Context, req, resp *typedpb.Blob) error {
	d := req.GetData()
	if len(d) > 0 {
		switch d[0] {
		case 'E':
			return service.Errorf(service.FailedPrecondition, "asked to fail")
		case 'P':
			panic("asked to panic")
		case 'D':
			if _, ok := ctx.Deadline(); !ok {
				return service.Errorf(service.Internal, "no deadline")
			}
		}
	}
	resp.SetData(d)
	return nil
}

// desc returns a copy of the generated Echo_ServiceDesc whose method has
// a counting Handler and a BufHandler.
func (s *borrowEcho) desc() *service.ServiceDesc {
	d := typedpb.Echo_ServiceDesc
	d.Methods = append([]service.MethodDesc(nil), d.Methods...)
	gen := d.Methods[0].Handler
	d.Methods[0].Handler = func(srv any, ctx context.Context, a *wire.Arena, body []byte, ic service.UnaryServerInterceptor, info *service.MethodInfo) (wire.Object, error) {
		s.byteCalls.Add(1)
		return gen(srv, ctx, a, body, ic, info)
	}
	d.Methods[0].BufHandler = s.bufHandler
	d.Methods[0].Direct = nil // these tests are about BufHandler (direct_test.go: Direct)
	return &d
}

func (s *borrowEcho) bufHandler(srv any, ctx context.Context, a *wire.Arena, in mem.Buf, ic service.UnaryServerInterceptor, info *service.MethodInfo) (wire.Object, error) {
	s.bufCalls.Add(1)
	if !a.BorrowInput {
		s.notBorrowed.Add(1)
	}
	req := typedpb.NewBlob(a)
	if err := req.Decode(in); err != nil {
		return nil, service.Errorf(service.InvalidArgument, "decoding the request: %v", err)
	}
	if a.Held() != 0 {
		s.held.Add(1)
	}
	a.BorrowInput = false
	resp := typedpb.NewBlob(a)
	if ic == nil {
		return resp, srv.(typedpb.EchoServer).Echo(ctx, req, resp)
	}
	return resp, ic(ctx, req, resp, info, func(ctx context.Context, req, resp any) error {
		return srv.(typedpb.EchoServer).Echo(ctx, req.(*typedpb.Blob), resp.(*typedpb.Blob))
	})
}

// borrowRun makes the calls of TestBufHandler* over a server registering
// s in mode and checks every answer; it returns how many were echoes.
func borrowRun(t *testing.T, s *borrowEcho, mode rpc.Mode) int {
	t.Helper()
	return borrowRunDesc(t, s, s.desc(), mode)
}

// borrowRunDesc is borrowRun with s's service described by d, on a Server
// made with opts.
func borrowRunDesc(t *testing.T, s *borrowEcho, d *service.ServiceDesc, mode rpc.Mode, opts ...service.ServerOption) int {
	t.Helper()
	h := newHarness(t, netKind{}, func(srv *service.Server) error {
		return srv.RegisterService(d, s, service.WithMode(mode))
	}, opts...)
	defer func() {
		if n := service.ResetErrors(h.srv); n != 0 {
			t.Errorf("%d call arenas failed their Reset (checked build: a borrowed request released before it)", n)
		}
	}()
	cl := typedpb.NewEchoClient(h.dial())
	a := wire.NewArena()
	long := bytes.Repeat([]byte("0123456789abcdef"), 512) // 8 KiB: several packets, zero-copy fields
	echoes := 0
	for round := 0; round < 3; round++ {
		for _, tc := range []struct {
			data     []byte
			deadline bool
			code     service.Code // OK: an echo
		}{
			{data: []byte("small request, inline answer")},
			{data: long},
			{data: nil},
			{data: []byte("E"), code: service.FailedPrecondition},
			{data: []byte("P"), code: service.Internal},
			{data: []byte("D with a deadline"), deadline: true},
			{data: append([]byte("D"), long...), deadline: true},
			{data: []byte("D without"), code: service.Internal},
		} {
			ctx := context.Background() // no deadline: the server's common path (a lost call fails the test by its timeout)
			if tc.deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
			}
			req := typedpb.NewBlob(a)
			req.SetData(tc.data)
			resp, err := cl.Echo(ctx, a, req)
			if tc.code != service.OK {
				var se *service.Error
				if !errors.As(err, &se) || se.Code != tc.code {
					t.Fatalf("round %d, %q: err %v, want code %v", round, tc.data[:1], err, tc.code)
				}
			} else if err != nil || !bytes.Equal(resp.GetData(), tc.data) {
				t.Fatalf("round %d, %d bytes: err %v, %d bytes back", round, len(tc.data), err, len(resp.GetData()))
			} else {
				echoes++
			}
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return echoes
}

// TestBufHandlerBorrowsRequest: a Dispatch method with a BufHandler is
// served by it, its request decoded with BorrowInput (the arena holds no
// reference on it), on every path (inline and multi-packet requests, a
// request field echoed zero-copy, an empty request, an error, a panic, a
// deadline). In the checked build (-tags cfcheck) the server's Reset of
// every call verifies that no borrowed request was released before it
// (borrowRun fails the test on any Reset error).
func TestBufHandlerBorrowsRequest(t *testing.T) {
	s := new(borrowEcho)
	echoes := borrowRun(t, s, rpc.Dispatch)
	if echoes != 15 {
		t.Errorf("%d echoes, want 15", echoes)
	}
	if n := s.bufCalls.Load(); n != 24 {
		t.Errorf("%d BufHandler calls, want 24", n)
	}
	if n := s.byteCalls.Load(); n != 0 {
		t.Errorf("%d Handler calls, want 0", n)
	}
	if n := s.notBorrowed.Load(); n != 0 {
		t.Errorf("%d BufHandler calls without BorrowInput", n)
	}
	if n := s.held.Load(); n != 0 {
		t.Errorf("%d borrowed decodes left a reference in the arena", n)
	}
}

// TestBufHandlerNotForWorkers: a Worker method's request is released when
// it is answered, before the arena's Reset: it is served by Handler (the
// arena's own reference), never by BufHandler.
func TestBufHandlerNotForWorkers(t *testing.T) {
	s := new(borrowEcho)
	borrowRun(t, s, rpc.Worker)
	if n := s.bufCalls.Load(); n != 0 {
		t.Errorf("%d BufHandler calls in worker mode, want 0", n)
	}
	if n := s.byteCalls.Load(); n != 24 {
		t.Errorf("%d Handler calls, want 24", n)
	}
}
