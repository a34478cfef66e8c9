package service_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
)

// Status errors match by code with errors.Is, carry details, and stay
// apart from transport errors.
func ExampleError() {
	var err error = fmt.Errorf("lookup: %w", &service.Error{Code: service.NotFound, Message: "no key k", Details: []byte{7}})
	var se *service.Error
	fmt.Println(errors.As(err, &se), se.Code, se.Message, se.Details)
	fmt.Println(errors.Is(err, &service.Error{Code: service.NotFound}), errors.Is(err, &service.Error{Code: service.Internal}))
	fmt.Println(service.CodeOf(err), service.CodeOf(rpc.ErrPeerFailed), service.CodeOf(context.Canceled), service.CodeOf(nil))
	fmt.Println(errors.Is(&service.Error{Code: service.DeadlineExceeded}, context.DeadlineExceeded))
	// Output:
	// true NotFound no key k [7]
	// true false
	// NotFound Unknown Canceled OK
	// true
}

// Metadata is a short list of pairs; handlers read it with
// IncomingMetadata, clients attach it with WithMetadata.
func ExampleMetadata_Get() {
	md := service.Metadata{{Key: "token", Value: "secret"}, {Key: "trace", Value: "t-1"}}
	v, ok := md.Get("trace")
	fmt.Println(v, ok)
	_, ok = md.Get("missing")
	fmt.Println(ok)
	// Output:
	// t-1 true
	// false
}
