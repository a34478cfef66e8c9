package svcall_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/svcall"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/service"
)

type types struct {
	svcall.UnimplementedTypesServer
}
type mixed struct {
	svcall.UnimplementedMixedServer
}
type nothing struct {
	svcall.UnimplementedNothingServer
}

// TestRegister: the stubs of services over every message construct
// register (RegisterService recomputes every recorded fingerprint and
// checks the server type), several services on one Server.
func TestRegister(t *testing.T) {
	nx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nx.Close() }()
	s, err := service.NewServer(nx)
	if err != nil {
		t.Fatal(err)
	}
	if err := svcall.RegisterTypesServer(s, types{}); err != nil {
		t.Fatal(err)
	}
	if err := svcall.RegisterMixedServer(s, mixed{}, service.WithMode(rpc.Worker)); err != nil {
		t.Fatal(err)
	}
	if err := svcall.RegisterNothingServer(s, nothing{}); err != nil {
		t.Fatal(err)
	}
	if err := svcall.RegisterTypesServer(s, types{}); err == nil {
		t.Fatal("registered a service twice")
	}
	if n := len(svcall.Mixed_ServiceDesc.Messages); n < 5 {
		t.Fatalf("Mixed reaches %d message types, want the nested and imported ones too", n)
	}
}
