package naos

import (
	"encoding/binary"
	"errors"
	"math"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// pair returns two connected Conns over network ("tcp" or "unix").
func pair(t testing.TB, network string, opts Options) (*Conn, *Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	c1, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c2 := <-ch
	if c2 == nil {
		t.Fatal("accept failed")
	}
	a, err := NewConn(c1, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewConn(c2, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

type Point struct{ X, Y float64 }

type Pair struct {
	Key int32
	Val string
}

type inner struct {
	b    bool
	n    int16
	s    string
	pts  []Point
	next *inner
}

type Shape interface{ Area() float64 }

type Rect struct{ W, H float64 }

func (r Rect) Area() float64 { return r.W * r.H }

type Circle struct {
	R    float64
	Name string
}

func (c *Circle) Area() float64 { return math.Pi * c.R * c.R }

type Everything struct {
	B     bool
	I8    int8
	I     int
	U64   uint64
	Up    uintptr
	F32   float32
	F64   float64
	C64   complex64
	C128  complex128
	S     string
	Arr   [3]int32
	ArrS  [2]string
	Sl    []int
	Nil   []int
	Empty []int
	Ss    []string
	Ptr   *Point
	PNil  *Point
	PP    **int
	Pairs []*Pair
	M     map[string]int
	MNil  map[string]int
	MEm   map[int]bool
	MP    map[Point][]string
	In    inner
	Sh    Shape
	Sh2   Shape
	Sh3   Shape
	Any   any
	Bools []bool
	priv  string
}

func init() {
	for _, v := range []any{Rect{}, &Circle{}, int(0), "", []Point{}} {
		if err := Register(v); err != nil {
			panic(err)
		}
	}
}

func everything() Everything {
	x := 42
	px := &x
	return Everything{
		B: true, I8: -3, I: 1 << 40, U64: math.MaxUint64, Up: 77, F32: 1.5, F64: math.Inf(-1),
		C64: complex(1, 2), C128: complex(-3, 4), S: "héllo", Arr: [3]int32{1, 2, 3},
		ArrS: [2]string{"a", ""}, Sl: []int{5, 6, 7}, Empty: []int{}, Ss: []string{"x", "", "yz"},
		Ptr: &Point{1, 2}, PP: &px, Pairs: []*Pair{{1, "one"}, nil, {3, "three"}},
		M: map[string]int{"a": 1, "b": 2}, MEm: map[int]bool{}, MP: map[Point][]string{{1, 1}: {"p"}, {2, 2}: nil},
		In: inner{b: true, n: -5, s: "in", pts: []Point{{3, 4}}, next: &inner{s: "deeper"}},
		Sh: Rect{2, 3}, Sh2: &Circle{R: 1, Name: "c"}, Any: []Point{{9, 9}}, Bools: []bool{true, false, true},
		priv: "unexported",
	}
}

func TestRoundTripStream(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		for _, o := range []Options{{}, {Sharing: true}, {Compact: true}, {Chunk: 64}} {
			a, b := pair(t, network, o)
			check := func(name string, v any, recv func() (any, error)) {
				t.Helper()
				errc := make(chan error, 1)
				go func() { errc <- a.Send(v) }()
				got, err := recv()
				if err != nil {
					t.Fatalf("%s %+v %s: Recv: %v", network, o, name, err)
				}
				if err := <-errc; err != nil {
					t.Fatalf("%s %+v %s: Send: %v", network, o, name, err)
				}
				if !reflect.DeepEqual(got, v) {
					t.Fatalf("%s %+v %s: got %#v, want %#v", network, o, name, got, v)
				}
			}
			check("everything", everything(), func() (any, error) { return Recv[Everything](b) })
			check("floats", []float32{1, 2, 3}, func() (any, error) { return Recv[[]float32](b) })
			check("points", []Point{{1, 2}, {3, 4}}, func() (any, error) { return Recv[[]Point](b) })
			check("pairs", []*Pair{{1, "a"}, {2, "bb"}}, func() (any, error) { return Recv[[]*Pair](b) })
			check("int", 7, func() (any, error) { return Recv[int](b) })
			check("string", "s", func() (any, error) { return Recv[string](b) })
			check("ptr", &Point{5, 6}, func() (any, error) { return Recv[*Point](b) })
			check("nilptr", (*Point)(nil), func() (any, error) { return Recv[*Point](b) })
			check("map", map[string][]int{"x": {1}, "y": nil}, func() (any, error) { return Recv[map[string][]int](b) })
			check("ifaces", []Shape{Rect{1, 1}, nil, &Circle{2, "x"}}, func() (any, error) { return Recv[[]Shape](b) })
			check("big", make([]float32, 1<<16), func() (any, error) { return Recv[[]float32](b) })
			check("empty struct", struct{}{}, func() (any, error) { return Recv[struct{}](b) })
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	v := everything()
	for _, o := range []Options{{}, {Sharing: true}, {Compact: true}} {
		msg, err := AppendEncode(nil, v, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode[Everything](msg, Limits{})
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("%+v: got %#v", o, got)
		}
		if _, err := Decode[Everything](append(msg, 0), Limits{}); !errors.Is(err, ErrFormat) {
			t.Fatalf("trailing byte: %v", err)
		}
	}
}

type node struct {
	V    int
	Next *node
	Kids []*node
}

func TestSharingAndCycles(t *testing.T) {
	a := &node{V: 1}
	b := &node{V: 2, Next: a}
	a.Next = b // cycle
	shared := &node{V: 3}
	a.Kids = []*node{shared, shared, b}
	for _, via := range []string{"stream", "encode"} {
		var got *node
		if via == "stream" {
			x, y := pair(t, "tcp", Options{Sharing: true})
			errc := make(chan error, 1)
			go func() { errc <- x.Send(a) }()
			var err error
			if got, err = Recv[*node](y); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		} else {
			msg, err := AppendEncode(nil, a, Options{Sharing: true})
			if err != nil {
				t.Fatal(err)
			}
			if got, err = Decode[*node](msg, Limits{}); err != nil {
				t.Fatal(err)
			}
		}
		if got.V != 1 || got.Next.V != 2 || got.Next.Next != got {
			t.Fatalf("%s: cycle not rebuilt", via)
		}
		if got.Kids[0] != got.Kids[1] || got.Kids[0].V != 3 || got.Kids[2] != got.Next {
			t.Fatalf("%s: sharing not rebuilt", via)
		}
	}
	// Without detection a cycle is refused once it exceeds the limit.
	_, err := AppendEncode(nil, a, Options{Limits: Limits{MaxBytes: 1 << 16}})
	if err == nil || !strings.Contains(err.Error(), "Sharing") {
		t.Fatalf("cycle without Sharing: %v", err)
	}
	// Without detection, sharing becomes copies.
	msg, err := AppendEncode(nil, []*node{shared, shared}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[[]*node](msg, Limits{})
	if err != nil || got[0] == got[1] || !reflect.DeepEqual(got[0], got[1]) {
		t.Fatalf("copies: %v %v", got, err)
	}
}

func TestFingerprintMismatch(t *testing.T) {
	a, b := pair(t, "tcp", Options{})
	go func() { _ = a.Send([]float64{1}); _ = a.Send(Point{1, 2}) }()
	_, err := Recv[[]float32](b)
	var me *MismatchError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "[]float64") || !strings.Contains(err.Error(), "[]float32") {
		t.Fatalf("got %v", err)
	}
	// The stream stays usable after a mismatch of a message of known length.
	p, err := Recv[Point](b)
	if err != nil || p != (Point{1, 2}) {
		t.Fatalf("after mismatch: %v %v", p, err)
	}
	// Same layout, other names: accepted (structural).
	type Q struct{ A, B float64 }
	msg, _ := AppendEncode(nil, Point{3, 4}, Options{})
	if q, err := Decode[Q](msg, Limits{}); err != nil || q != (Q{3, 4}) {
		t.Fatalf("structural: %v %v", q, err)
	}
	// Other layouts: refused.
	for _, f := range []func() error{
		func() error { _, err := Decode[struct{ A, B float32 }](msg, Limits{}); return err },
		func() error { _, err := Decode[[2]float64](msg, Limits{}); return err },
		func() error { _, err := Decode[struct{ A, B int64 }](msg, Limits{}); return err },
	} {
		if err := f(); !errors.As(err, &me) {
			t.Fatalf("want mismatch, got %v", err)
		}
	}
}

type bad struct {
	A  int
	In struct {
		F []func()
	}
}

func TestUnsupported(t *testing.T) {
	for _, tc := range []struct {
		v    any
		path string
	}{
		{bad{}, ".In.F[]"},
		{struct{ C chan int }{}, ".C"},
		{map[string]*struct {
			P uintptr
			U [1]any
			X func()
		}{}, "[val][]*.X"},
	} {
		_, err := AppendEncode(nil, tc.v, Options{})
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Path != tc.path {
			t.Fatalf("%T: got %v, want path %s", tc.v, err, tc.path)
		}
	}
	type unreg struct{ X int }
	_, err := AppendEncode(nil, struct{ A any }{unreg{}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("unregistered: %v", err)
	}
}

// A compact array of nil pointers (one bitmap byte for many elements) is
// received, and its pointer array is bounded by the bitmap still to come.
func TestCompactNils(t *testing.T) {
	v := make([]*Pair, 100)
	v[50] = &Pair{1, "x"}
	msg, err := AppendEncode(nil, v, Options{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[[]*Pair](msg, Limits{})
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("got %v, %v", got, err)
	}
	// A length of 2^16 elements needs a bitmap of 8 KiB, which the message
	// does not have: refused before the pointer array is allocated.
	hl := headerSize + len("[]*naos.Pair")
	binary.LittleEndian.PutUint64(msg[hl+8:], 1<<16)
	if _, err := Decode[[]*Pair](msg, Limits{}); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "bitmap of 65536") {
		t.Fatalf("long bitmap: %v", err)
	}
}
