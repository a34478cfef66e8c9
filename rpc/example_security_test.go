package rpc_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cornflakes-go/cornflakes/rpc"
)

// A server accepts the handshakes of holders of its keyring's credentials;
// Set rotates the keys while it serves.
func ExampleNewKeyring() {
	secret := []byte("0123456789abcdef0123456789abcdef")
	kr, err := rpc.NewKeyring(
		rpc.Key{Credential: rpc.Credential{Name: "reader", Secret: secret}, Role: 1},
		rpc.Key{Credential: rpc.Credential{Name: "writer", Secret: secret}, Role: 2},
	)
	if err != nil {
		panic(err)
	}
	srv, err := rpc.NewNexus(rpc.NexusConfig{Keys: kr})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// Rotation: the writer's secret moves to a new name.
	err = kr.Set(
		rpc.Key{Credential: rpc.Credential{Name: "reader", Secret: secret}, Role: 1},
		rpc.Key{Credential: rpc.Credential{Name: "writer-2", Secret: []byte("fedcba9876543210fedcba9876543210")}, Role: 2},
	)
	names := kr.Names()
	slices.Sort(names)
	fmt.Println(names, err)

	// Secrets shorter than MinSecretSize are refused.
	_, err = rpc.NewKeyring(rpc.Key{Credential: rpc.Credential{Name: "weak", Secret: []byte("short")}})
	fmt.Println(errors.Is(err, rpc.ErrBadKey))
	// Output:
	// [reader writer-2] <nil>
	// true
}
