package naos_test

import (
	"errors"
	"fmt"
	"net"

	"github.com/cornflakes-go/cornflakes/naos"
)

type Point struct{ X, Y float64 }

type Shape interface{ Area() float64 }

type Square struct{ Side float64 }

func (s Square) Area() float64 { return s.Side * s.Side }

// conns returns two connected Conns over loopback TCP.
func conns() (*naos.Conn, *naos.Conn) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); ch <- c }()
	c1, _ := net.Dial("tcp", ln.Addr().String())
	a, _ := naos.NewConn(c1, naos.Options{})
	b, _ := naos.NewConn(<-ch, naos.Options{})
	return a, b
}

// Send a slice of points from its own memory and receive it as a new
// slice: one writev, one read into the new slice's memory.
func Example() {
	a, b := conns()
	defer a.Close()
	defer b.Close()
	go func() { _ = a.Send([]Point{{1, 2}, {3, 4}}) }()
	pts, err := naos.Recv[[]Point](b)
	fmt.Println(pts, err)
	// A value of another layout is refused, naming both types.
	go func() { _ = a.Send([]float32{1}) }()
	_, err = naos.Recv[[]float64](b)
	var me *naos.MismatchError
	if errors.As(err, &me) {
		fmt.Println("refused:", me.Sent, "is not", me.Want)
	}
	// Output:
	// [{1 2} {3 4}] <nil>
	// refused: []float32 is not []float64
}

// An asynchronous send: the value must not change until the handle
// completes.
func ExampleConn_SendAsync() {
	a, b := conns()
	defer a.Close()
	defer b.Close()
	h := a.SendAsync(map[string]int{"a": 1})
	m, _ := naos.Recv[map[string]int](b)
	fmt.Println(m, h.Wait())
	// Output: map[a:1] <nil>
}

// Interfaces carry registered concrete types.
func ExampleRegister() {
	if err := naos.Register(Square{}); err != nil {
		fmt.Println(err)
	}
	msg, _ := naos.AppendEncode(nil, []Shape{Square{2}, nil}, naos.Options{})
	s, err := naos.Decode[[]Shape](msg, naos.Limits{})
	fmt.Println(s[0].Area(), s[1], err)
	// Output: 4 <nil> <nil>
}

type Node struct {
	Name string
	Next *Node
}

// With sharing detection a cycle is rebuilt on the receiver.
func ExampleOptions_sharing() {
	n := &Node{Name: "a", Next: &Node{Name: "b"}}
	n.Next.Next = n
	msg, _ := naos.AppendEncode(nil, n, naos.Options{Sharing: true})
	m, _ := naos.Decode[*Node](msg, naos.Limits{})
	fmt.Println(m.Name, m.Next.Name, m.Next.Next == m)
	// Output: a b true
}

// Channels, functions and unsafe pointers are refused, naming the field.
func ExampleUnsupportedError() {
	_, err := naos.AppendEncode(nil, struct{ Done chan bool }{}, naos.Options{})
	fmt.Println(err)
	// Output: naos: cannot send struct { Done chan bool }: field .Done is a chan (channels, functions and unsafe pointers are not supported)
}

// Receive a stream of arrays into one reused array: once it is large
// enough, each message lands in it with one read and nothing is allocated.
func ExampleRecvInto() {
	a, b := conns()
	defer a.Close()
	defer b.Close()
	go func() {
		_ = a.Send([]float32{1, 2, 3})
		_ = a.Send([]float32{4, 5})
	}()
	buf := make([]float32, 0, 1024)
	for i := 0; i < 2; i++ {
		if err := naos.RecvInto(b, &buf); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(buf, cap(buf))
	}
	// Output:
	// [1 2 3] 1024
	// [4 5] 1024
}
