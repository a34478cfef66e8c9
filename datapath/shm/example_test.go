package shm_test

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/mem"
)

// A server and a client (here in one process; usually two) exchange a
// request and a zero-copy response. The server's values live in a shared
// space registered for sending; the client receives the response as a
// head plus a view of the server's memory.
func Example() {
	space, err := mem.NewSpace(mem.SpaceConfig{Size: 64 << 20, Shared: true})
	if err != nil {
		panic(err)
	}
	defer space.Close()
	values, _ := mem.NewPool(mem.PoolConfig{Name: "values", Space: space})
	defer values.Close()
	opts := shm.Options{Namespace: fmt.Sprint("example-", os.Getpid()), Spaces: []*mem.Space{space}}

	server, err := datapath.Open("shm", datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:7000"), Options: opts})
	if err != nil {
		panic(err)
	}
	defer server.Close()
	client, err := datapath.Open("shm", datapath.Config{Options: opts}) // an ephemeral address
	if err != nil {
		panic(err)
	}
	defer client.Close()

	// The first send connects (rendezvous at the server's socket).
	_ = client.Send(server.LocalAddr(), []byte("get"))
	_ = client.Flush()

	req := make([]datapath.Packet, 1)
	for n := 0; n == 0; n, _ = server.Recv(req) {
		_ = server.Wait(10e6)
	}
	fmt.Printf("server got %q\n", req[0].Buf.Bytes())
	_ = req[0].Buf.Release()

	value, _ := values.AllocCopy([]byte("a large value, sent zero-copy"))
	_ = server.SendSegments(req[0].From, []byte("ok:"), []mem.Buf{value})
	_ = value.Release() // the datapath holds its own reference until the client releases
	_ = server.Flush()

	resp := make([]datapath.Segmented, 1)
	rx := client.(datapath.SegmentReceiver)
	for n := 0; n == 0; n, _ = rx.RecvSegments(resp) {
		_ = client.Wait(10e6)
	}
	fmt.Printf("client got %q + %q\n", resp[0].Segs[0], resp[0].Segs[1])
	fmt.Println("server address:", server.LocalAddr())
	_ = resp[0].Hold.Release()
	// Output:
	// server got "get"
	// client got "ok:" + "a large value, sent zero-copy"
	// server address: 127.0.0.1:7000
}
