package naos

import (
	"bytes"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"unsafe"
)

// RecvInto lands an array of pointer-free elements in the caller's array
// when it is large enough, allocates otherwise, and receives every other
// type as Recv does.
func TestRecvInto(t *testing.T) {
	a, b := pair(t, "tcp", Options{})
	buf := make([]Point, 3, 8)
	base := unsafe.SliceData(buf)
	steps := []struct {
		send      []Point
		sameArray bool
	}{
		{[]Point{{1, 2}, {3, 4}}, true},                  // fits: same array, shorter
		{[]Point{{5, 6}, {7, 8}, {9, 10}, {1, 1}}, true}, // fits: longer, within cap
		{make([]Point, 9), false},                        // too long: a new array
		{[]Point{}, true},                                // empty, not nil
		{nil, false},                                     // nil
	}
	for i, s := range steps {
		if err := a.Send(s.send); err != nil {
			t.Fatal(err)
		}
		prev := unsafe.SliceData(buf)
		if err := RecvInto(b, &buf); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !reflect.DeepEqual(buf, s.send) {
			t.Fatalf("step %d: got %v, want %v", i, buf, s.send)
		}
		if s.send != nil && (unsafe.SliceData(buf) == prev) != s.sameArray {
			t.Fatalf("step %d: array reused %v, want %v", i, unsafe.SliceData(buf) == prev, s.sameArray)
		}
		if i < 2 && (unsafe.SliceData(buf) != base || cap(buf) != 8) {
			t.Fatalf("step %d: capacity %d of another array", i, cap(buf))
		}
	}
	// Other types are received whole, whatever *dst held.
	m := map[string][]int{"x": {1}}
	if err := a.Send(map[string][]int{"a": {2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := RecvInto(b, &m); err != nil || !reflect.DeepEqual(m, map[string][]int{"a": {2, 3}}) {
		t.Fatalf("map: %v %v", m, err)
	}
	ps := []*Pair{{1, "old"}, {2, "old"}}
	if err := a.Send([]*Pair{nil, {3, "new"}}); err != nil {
		t.Fatal(err)
	}
	if err := RecvInto(b, &ps); err != nil || !reflect.DeepEqual(ps, []*Pair{nil, {3, "new"}}) {
		t.Fatalf("pairs: %v %v", ps, err)
	}
}

// On a mismatch or malformed input, *dst is the zero value and the
// caller's array holds valid elements.
func TestRecvIntoErrors(t *testing.T) {
	a, b := pair(t, "tcp", Options{})
	fs := []float32{1, 2, 3}
	if err := a.Send([]int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	var me *MismatchError
	if err := RecvInto(b, &fs); !errors.As(err, &me) || fs != nil {
		t.Fatalf("mismatch: %v, %v", err, fs)
	}
	// A bool outside 0/1 in an array received into the caller's memory.
	msg, err := AppendEncode(nil, []bool{true, false, true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg[len(msg)-2] = 7
	old := []bool{false, false, false, false}
	arr := old
	x, y := net2(t)
	if _, err := x.Write(msg); err != nil {
		t.Fatal(err)
	}
	k, err := NewConn(y, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if err := RecvInto(k, &arr); !errors.Is(err, ErrFormat) || arr != nil {
		t.Fatalf("bad bool: %v, %v", err, arr)
	}
	for i, v := range old {
		if b := *(*byte)(unsafe.Pointer(&old[i])); b > 1 {
			t.Fatalf("element %d holds %d (%v)", i, b, v)
		}
	}
}

func TestRecvIntoAllocs(t *testing.T) {
	a, b := pair(t, "tcp", Options{})
	var v any = make([]float32, 1<<12) // converted once: Send itself must not allocate
	var w []float32
	errc := make(chan error, 1)
	const n = 50
	go func() {
		for i := 0; i < n+2; i++ {
			if err := a.Send(v); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if err := RecvInto(b, &w); err != nil { // first: allocates the array
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(n, func() {
		if err := RecvInto(b, &w); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per RecvInto, want 0", allocs)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// net2 returns the two ends of a loopback TCP connection.
func net2(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	x, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	y := <-ch
	if y == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = x.Close(); _ = y.Close() })
	return x, y
}

// FuzzRecvInto feeds arbitrary streams to the receiver with reused
// arrays: every message is an error of the documented kinds or a value
// equal to a fresh Decode of the same bytes, and a reused array only ever
// holds valid elements.
func FuzzRecvInto(f *testing.F) {
	fuzzSeeds(f)
	for _, v := range []any{[]Point{{1, 2}}, []bool{true, false}, []float32{1, 2, 3},
		[]*Pair{{1, "a"}, nil, {2, ""}}, []*flatB{{1, true, "s", "t"}, nil}} {
		for _, o := range []Options{{}, {Compact: true}} {
			msg, err := AppendEncode(nil, v, o)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(msg)
			f.Add(append(append([]byte{}, msg...), msg...))
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		run := func(name string, step func(d *decoder) error) {
			d := &decoder{lim: fuzzLimits.withDefaults()}
			d.r = &reader{rd: bytes.NewReader(msg), buf: make([]byte, 4096)}
			for i := 0; i < 4; i++ {
				err := step(d)
				var me *MismatchError
				if err == nil || errors.As(err, &me) {
					continue
				}
				if !errors.Is(err, ErrFormat) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("%s: unexpected error: %v", name, err)
				}
				return
			}
		}
		pts := make([]Point, 2, 8)
		run("points", func(d *decoder) error { return decodeInto(d, &pts, mustPlan[[]Point]()) })
		ps := []*Pair{{1, "old"}, {2, "old"}, {3, "old"}}
		run("pairs", func(d *decoder) error { return decodeInto(d, &ps, mustPlan[[]*Pair]()) })
		fb := make([]*flatB, 3, 16)
		objs := make([]flatB, 3)
		for i := range fb {
			fb[i] = &objs[i]
		}
		run("flat", func(d *decoder) error { return decodeInto(d, &fb, mustPlan[[]*flatB]()) })
		for i := range objs {
			if b := *(*byte)(unsafe.Pointer(&objs[i].B)); b > 1 {
				t.Fatalf("reused object holds bool %d", b)
			}
		}
		bs := make([]bool, 4, 64)
		arr := bs[:cap(bs)]
		run("bools", func(d *decoder) error { return decodeInto(d, &bs, mustPlan[[]bool]()) })
		for i := range arr {
			if b := *(*byte)(unsafe.Pointer(&arr[i])); b > 1 {
				t.Fatalf("reused array holds bool %d", b)
			}
		}
	})
}
