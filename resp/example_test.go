package resp_test

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/cornflakes-go/cornflakes/resp"
)

// A server with its own store on a loopback port, used through go-redis.
// Close stops it, closes its connections and frees its registered memory.
func ExampleNewServer() {
	srv, err := resp.NewServer(resp.Config{PoolBytes: 64 << 20})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()

	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	ctx := context.Background()
	c.Set(ctx, "greeting", "hello", 0)
	c.RPush(ctx, "list", "a", "b", "c")
	fmt.Println(c.Get(ctx, "greeting").Val())
	fmt.Println(c.LRange(ctx, "list", 0, -1).Val())
	fmt.Println(c.Get(ctx, "absent").Err() == redis.Nil)
	_ = c.Close()

	fmt.Println(srv.Close(), errors.Is(<-done, resp.ErrServerClosed))
	// Output:
	// hello
	// [a b c]
	// true
	// <nil> true
}

// Values of at least Config.Threshold bytes are written from registered
// memory without a copy; Stats counts them.
func ExampleServer_Stats() {
	srv, err := resp.NewServer(resp.Config{PoolBytes: 64 << 20})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	ctx := context.Background()
	c.Set(ctx, "small", "tiny", 0)
	c.Set(ctx, "large", make([]byte, 4096), 0)
	c.MGet(ctx, "small", "large")
	_ = c.Close()
	st := srv.Stats()
	fmt.Println(st.ZeroCopy, st.ZCBytes)
	_ = srv.Close()
	<-done
	// Output:
	// 1 4096
}

// The parser consumes one command per call from a connection's buffer;
// pipelined commands are consumed by calling Next until it returns 0.
func ExampleParser() {
	var p resp.Parser
	buf := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nEC")
	for {
		args, n, err := p.Next(buf)
		if err != nil || n == 0 {
			fmt.Printf("%d bytes wait for more input, err %v\n", len(buf), err)
			break
		}
		fmt.Printf("%q\n", args)
		buf = buf[n:]
	}
	p.Reset() // a new connection
	_, _, err := p.Next([]byte("*1\r\n$99999999\r\n"))
	fmt.Println(err)
	// Output:
	// ["GET" "k"]
	// ["PING"]
	// 10 bytes wait for more input, err <nil>
	// Protocol error: invalid bulk length
}

// A large argument's body received apart from the connection's buffer
// (as the server reads one into registered memory): once the header is
// parsed, PendingBulk says where the body starts and how long it is; the
// body is given with SetExternal, and the buffer holds only its CRLF.
func ExampleParser_SetExternal() {
	var p resp.Parser
	buf := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123")
	_, n, _ := p.Next(buf)
	pos, length, ok := p.PendingBulk()
	fmt.Println(n, pos, length, ok)
	body := make([]byte, length)       // elsewhere (the server: a pool buffer)
	k := copy(body, buf[pos:])         // what had arrived
	copy(body[k:], "456789")           // the rest, read straight into it
	buf = append(buf[:pos], "\r\n"...) // then the CRLF
	p.SetExternal(body)
	args, n, err := p.Next(buf)
	fmt.Printf("%q %d %v %v\n", args, n, err, &args[2][0] == &body[0])
	// Output:
	// 0 25 10 true
	// ["SET" "k" "0123456789"] 27 <nil> true
}

// A server with a password and a read-only user: clients authenticate
// with AUTH (or HELLO ... AUTH), and the read-only user may not write.
func ExampleConfig_users() {
	srv, err := resp.NewServer(resp.Config{PoolBytes: 64 << 20, Password: "s3cret",
		Users: []resp.User{{Name: "reader", Password: "r", ReadOnly: true}}})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ctx := context.Background()
	anon := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	fmt.Println(anon.Get(ctx, "k").Err())
	admin := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Password: "s3cret"})
	fmt.Println(admin.Set(ctx, "k", "v", 0).Err())
	reader := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Username: "reader", Password: "r"})
	fmt.Println(reader.Get(ctx, "k").Val())
	fmt.Println(reader.Set(ctx, "k", "w", 0).Err())
	for _, c := range []*redis.Client{anon, admin, reader} {
		_ = c.Close()
	}
	_ = srv.Close()
	<-done
	// Output:
	// NOAUTH Authentication required.
	// <nil>
	// v
	// NOPERM this user has no permissions to run the 'set' command
}

// Memory sizes as Redis's maxmemory takes them.
func ExampleParseMemory() {
	for _, s := range []string{"100", "1k", "1kb", "64mb", "2GB"} {
		n, _ := resp.ParseMemory(s)
		fmt.Println(s, n)
	}
	// Output:
	// 100 100
	// 1k 1000
	// 1kb 1024
	// 64mb 67108864
	// 2GB 2147483648
}

// Keys counts the keys of all 16 databases; FlushAll empties them, as
// FLUSHALL.
func ExampleServer_FlushAll() {
	srv, err := resp.NewServer(resp.Config{PoolBytes: 64 << 20})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), DB: 3})
	ctx := context.Background()
	c.Set(ctx, "a", "1", 0)
	c.HSet(ctx, "h", "f", "v")
	_ = c.Close()
	fmt.Println(srv.Keys())
	srv.FlushAll()
	fmt.Println(srv.Keys())
	_ = srv.Close()
	<-done
	// Output:
	// 2
	// 0
}
