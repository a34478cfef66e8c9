package kv_test

import (
	"fmt"
	"strings"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// A credentials file gives the server its keys (with their roles) and a
// client its credential.
func ExampleParseCredentials() {
	file := `# name role secret
reader read 00112233445566778899aabbccddeeff
writer readwrite ffeeddccbbaa99887766554433221100
`
	keys, err := kv.ParseCredentials(strings.NewReader(file))
	if err != nil {
		panic(err)
	}
	kr, _ := rpc.NewKeyring(keys...) // kv.ServerConfig{Keys: kr}
	cred, _ := kv.Credential(keys, "reader")
	fmt.Println(len(kr.Names()), cred.Name, keys[0].Role == kv.RoleRead, keys[1].Role == kv.RoleReadWrite)
	// Output: 2 reader true true
}
