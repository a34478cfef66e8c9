package shm_test

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// A server that sends generated messages asserts datapath.SGASender once
// and calls SendSGA: SendObject's packet without its type assertion per
// send. The message's large value goes zero-copy from the shared space.
func ExampleEndpoint_SendSGA() {
	space, err := mem.NewSpace(mem.SpaceConfig{Size: 64 << 20, Shared: true})
	if err != nil {
		panic(err)
	}
	defer space.Close()
	values, _ := mem.NewPool(mem.PoolConfig{Name: "values", Space: space})
	defer values.Close()
	opts := shm.Options{Namespace: fmt.Sprint("example-sga-", os.Getpid()), Spaces: []*mem.Space{space}}

	server, err := datapath.Open("shm", datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:7001"), Options: opts})
	if err != nil {
		panic(err)
	}
	defer server.Close()
	client, err := datapath.Open("shm", datapath.Config{Options: opts})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	send, ok := server.(datapath.SGASender) // once, at setup
	fmt.Println("typed send:", ok)

	_ = client.Send(server.LocalAddr(), []byte("get"))
	_ = client.Flush()
	req := make([]datapath.Packet, 1)
	for n := 0; n == 0; n, _ = server.Recv(req) {
		_ = server.Wait(10e6)
	}
	_ = req[0].Buf.Release()

	a := wire.NewArena()
	a.Threshold = 16 // values of 16 bytes and more go zero-copy
	value, _ := values.AllocCopy([]byte("a large value, sent zero-copy"))
	m := cf.NewListBuffers(a)
	l := m.InitMessages(2)
	l.Append([]byte("small"))
	l.AppendBuf(value)
	if err := send.SendSGA(req[0].From, []byte("ok:"), m); err != nil {
		panic(err)
	}
	_ = a.Reset()       // the datapath holds its own references
	_ = value.Release() // and keeps the value until the client releases it
	_ = server.Flush()

	resp := make([]datapath.Packet, 1)
	for n := 0; n == 0; n, _ = client.Recv(resp) {
		_ = client.Wait(10e6)
	}
	b := wire.NewArena()
	got := cf.NewListBuffers(b)
	if err := got.DecodeBytes(resp[0].Buf.Bytes()[3:]); err != nil {
		panic(err)
	}
	gl, _ := got.GetMessages()
	fmt.Printf("client got %q: %q, %q\n", resp[0].Buf.Bytes()[:3], gl.At(0), gl.At(1))
	_ = b.Reset()
	_ = resp[0].Buf.Release()
	// Output:
	// typed send: true
	// client got "ok:": "small", "a large value, sent zero-copy"
}
