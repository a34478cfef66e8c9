package kv_test

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/workload"
)

// roundTrip sends one request on conn and waits for its response, which
// deliver receives (its values are borrowed until deliver returns).
func roundTrip(conn *kv.Conn, r *workload.Request, deliver func(*workload.Response)) error {
	if err := conn.Send(1, r); err != nil {
		return err
	}
	done := false
	for deadline := time.Now().Add(5 * time.Second); !done; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%v: no response", r.Op)
		}
		// Sleep in the socket until a packet may have arrived, instead
		// of spinning, then run the endpoint loop once.
		if err := conn.Wait(time.Millisecond); err != nil {
			return err
		}
		if _, err := conn.Poll(func(_ uint64, resp *workload.Response) {
			done = true
			deliver(resp)
		}); err != nil {
			return err
		}
	}
	return nil
}

// printResp prints a response: its status and its values.
func printResp(r *workload.Request) func(*workload.Response) {
	return func(resp *workload.Response) {
		fmt.Printf("%v: %v %q\n", r.Op, resp.Status, resp.Values)
	}
}

// bytesOf makes the Keys or Values of a request.
func bytesOf(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, k := range s {
		out[i] = []byte(k)
	}
	return out
}

// A server on loopback UDP (kernel sockets, the default datapath) and a
// client connection to it: put, get, delete. Close the connection, then
// the client, then the server, whose Close fails if registered memory is
// still referenced.
func ExampleNewClient() {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20}) // Addr 127.0.0.1:0
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := srv.Close(); err != nil {
			fmt.Println(err)
		}
	}()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	conn, err := cl.Dial(kv.CodecCFHybrid)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	for _, r := range []*workload.Request{
		{Op: workload.OpPut, Keys: bytesOf("greeting"), Values: bytesOf("hello")},
		{Op: workload.OpGet, Keys: bytesOf("greeting")},
		{Op: workload.OpDelete, Keys: bytesOf("greeting")},
		{Op: workload.OpGet, Keys: bytesOf("greeting")},
		{Op: workload.OpDelete, Keys: bytesOf("greeting")},
	} {
		if err := roundTrip(conn, r, printResp(r)); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("%+v\n", srv.Stats())
	// Output:
	// put: ok []
	// get: ok ["hello"]
	// delete: ok []
	// get: not-found []
	// delete: not-found []
	// {Requests:5 Errors:0 Denied:0}
}

// exampleConn starts a server on loopback UDP and opens a connection
// speaking codec to it, as ExampleNewClient does step by step; stop closes
// the connection, the client and the server, printing the server's Close
// error (registered memory still referenced).
func exampleConn(codec kv.Codec) (conn *kv.Conn, stop func(), err error) {
	srv, err := kv.NewServer(kv.ServerConfig{PoolBytes: 64 << 20})
	if err != nil {
		return nil, nil, err
	}
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr()})
	if err != nil {
		_ = srv.Close()
		return nil, nil, err
	}
	if conn, err = cl.Dial(codec); err != nil {
		_ = cl.Close()
		_ = srv.Close()
		return nil, nil, err
	}
	return conn, func() {
		_ = conn.Close()
		_ = cl.Close()
		if err := srv.Close(); err != nil {
			fmt.Println(err)
		}
	}, nil
}

// The multi-value operations: several keys per request (GetM, PutM) and
// lists (PutList, AppendToList, GetList, GetFromList). One server answers
// every serializer at once; each connection speaks one, here FlatBuffers.
func ExampleConn_Send() {
	conn, stop, err := exampleConn(kv.CodecFlatBuffers)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	for _, r := range []*workload.Request{
		{Op: workload.OpPutM, Keys: bytesOf("a", "b", "c"), Values: bytesOf("1", "2", "3")},
		{Op: workload.OpGetM, Keys: bytesOf("c", "a")},
		{Op: workload.OpGetM, Keys: bytesOf("a", "missing")}, // one key missing: not-found
		{Op: workload.OpPutList, Keys: bytesOf("list"), Values: bytesOf("x", "y")},
		{Op: workload.OpAppendToList, Keys: bytesOf("list"), Values: bytesOf("z")},
		{Op: workload.OpGetList, Keys: bytesOf("list")},
		{Op: workload.OpGetFromList, Keys: bytesOf("list"), Index: 1},
		{Op: workload.OpGetFromList, Keys: bytesOf("list"), Index: 3},
	} {
		if err := roundTrip(conn, r, printResp(r)); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// putm: ok []
	// getm: ok ["3" "1"]
	// getm: not-found []
	// putlist: ok []
	// appendtolist: ok []
	// getlist: ok ["x" "y" "z"]
	// getfromlist: ok ["y"]
	// getfromlist: not-found []
}

// ShardOf is how a client with ClientConfig.Endpoints > 1 picks the server
// endpoint for a request (its first key), and how the server's store
// shards its keys: FNV-1a of the key modulo the number of endpoints.
func ExampleShardOf() {
	fmt.Println("key n=2 n=3 n=4")
	for _, k := range []string{"a", "b", "c", "d"} {
		fmt.Println(k, kv.ShardOf([]byte(k), 2), kv.ShardOf([]byte(k), 3), kv.ShardOf([]byte(k), 4))
	}
	// Output:
	// key n=2 n=3 n=4
	// a 0 1 0
	// b 1 1 1
	// c 0 0 2
	// d 1 1 3
}

// The RPC request type of a request names its serializer and its
// operation: codec<<4 | op. LookupCodec maps the command-line names to
// a codec.
func ExampleReqType() {
	for _, c := range []kv.Codec{kv.CodecCFHybrid, kv.CodecProtobuf, kv.CodecCapnp} {
		fmt.Printf("%-18v %-11s get %#02x getm %#02x\n", c, c.Serializer(),
			kv.ReqType(c, workload.OpGet), kv.ReqType(c, workload.OpGetM))
	}
	c, err := kv.LookupCodec("cornflakes", "copy", false) // serialize-and-send off
	fmt.Println(c, err)
	_, err = kv.LookupCodec("json", "", true)
	fmt.Println(err)
	// Output:
	// cornflakes/hybrid  cornflakes  get 0x11 getm 0x13
	// protobuf           protobuf    get 0x71 getm 0x73
	// capnp              capnp       get 0xa1 getm 0xa3
	// cornflakes/copy/flat <nil>
	// kv: unknown serializer "json" (have cornflakes, protobuf, vtprotobuf, flatbuffers, capnp)
}
