package service_test

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/cornflakes-go/cornflakes/service"
	v1 "github.com/cornflakes-go/cornflakes/service/internal/svcv1"
	v2 "github.com/cornflakes-go/cornflakes/service/internal/svcv2"
)

// greeterV1 serves version 1 of the test service.
type greeterV1 struct {
	v1.UnimplementedGreeterServer
	slept   chan error // Sleep reports why its context ended
	started chan struct{}
	calls   atomic.Int64
}

func newGreeterV1() *greeterV1 {
	return &greeterV1{slept: make(chan error, 16), started: make(chan struct{}, 16)}
}

func hello(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", service.Errorf(service.InvalidArgument, "empty name")
	}
	msg := "hello, " + name
	if v, ok := service.IncomingMetadata(ctx).Get("trace"); ok {
		msg += " trace=" + v
	}
	return msg, nil
}

func (g *greeterV1) SayHello(ctx context.Context, req *v1.HelloRequest, resp *v1.HelloReply) error {
	g.calls.Add(1)
	name, err := req.GetName()
	if err != nil {
		return err
	}
	msg, err := hello(ctx, name)
	if err != nil {
		return err
	}
	resp.SetMessage(msg)
	resp.SetSeq(req.GetSeq())
	if n := req.GetBlobSize(); n > 0 {
		resp.SetBlob([]byte(strings.Repeat("z", int(n))))
	}
	return nil
}

func (g *greeterV1) Fail(ctx context.Context, req *v1.FailRequest, resp *v1.HelloReply) error {
	msg, _ := req.GetMessage()
	return &service.Error{Code: service.Code(req.GetCode()), Message: msg, Details: append([]byte(nil), req.GetDetails()...)}
}

func (g *greeterV1) Sleep(ctx context.Context, req *v1.HelloRequest, resp *v1.HelloReply) error {
	g.started <- struct{}{}
	<-ctx.Done()
	g.slept <- ctx.Err()
	return ctx.Err()
}

func (g *greeterV1) Panic(ctx context.Context, req *v1.HelloRequest, resp *v1.HelloReply) error {
	panic("the handler panicked")
}

func (g *greeterV1) Lookup(ctx context.Context, req *v1.LookupRequest, resp *v1.HelloReply) error {
	resp.SetSeq(req.GetId())
	return nil
}

// greeterV2 serves version 2 (it adds SayGoodbye and fields; Lookup's id
// became a string).
type greeterV2 struct {
	v2.UnimplementedGreeterServer
}

func (g *greeterV2) SayHello(ctx context.Context, req *v2.HelloRequest, resp *v2.HelloReply) error {
	name, err := req.GetName()
	if err != nil {
		return err
	}
	msg, err := hello(ctx, name)
	if err != nil {
		return err
	}
	if gr, _ := req.GetGreeting(); gr != "" {
		msg = gr + ", " + name
	}
	resp.SetMessage(msg)
	resp.SetSeq(req.GetSeq())
	resp.SetLength(uint32(len(msg)))
	return nil
}

func (g *greeterV2) SayGoodbye(ctx context.Context, req *v2.HelloRequest, resp *v2.HelloReply) error {
	name, _ := req.GetName()
	resp.SetMessage("goodbye, " + name)
	return nil
}

// calc serves Calc (the same in both versions).
type calc struct{}

func (calc) SumTree(ctx context.Context, req *v1.Tree, resp *v1.Sum) error {
	var walk func(t *v1.Tree) error
	walk = func(t *v1.Tree) error {
		resp.SetTotal(resp.GetTotal() + t.GetValue())
		resp.SetNodes(resp.GetNodes() + 1)
		kids, err := t.GetKids()
		if err != nil {
			return err
		}
		for i := 0; i < kids.Len(); i++ {
			if err := walk(kids.At(i)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(req)
}

func registerV1(g *greeterV1, opts ...service.RegisterOption) func(s *service.Server) error {
	return func(s *service.Server) error {
		if err := v1.RegisterGreeterServer(s, g, opts...); err != nil {
			return err
		}
		return v1.RegisterCalcServer(s, calc{})
	}
}
