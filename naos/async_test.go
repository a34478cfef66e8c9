package naos

import (
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
	"testing/quick"
	"time"
)

// A peer that does not read: the asynchronous send of a message larger
// than the socket buffers stays incomplete (Test) until the peer reads.
func TestAsyncWithStallingPeer(t *testing.T) {
	for _, chunk := range []int{0, 32 << 10} {
		a, b := pair(t, "tcp", Options{Chunk: chunk})
		big := make([]Point, 1<<20) // 16 MiB
		for i := range big {
			big[i] = Point{float64(i), -float64(i)}
		}
		h := a.SendAsync(big)
		h2 := a.SendAsync([]*Pair{{1, "after"}})
		time.Sleep(50 * time.Millisecond) // the peer stalls
		if done, _ := h.Test(); done {
			t.Fatal("16 MiB send completed with a stalled peer")
		}
		got, err := Recv[[]Point](b)
		if err != nil || !reflect.DeepEqual(got, big) {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		if err := h.Wait(); err != nil {
			t.Fatal(err)
		}
		p, err := Recv[[]*Pair](b)
		if err != nil || p[0].Val != "after" {
			t.Fatalf("second: %v %v", p, err)
		}
		if done, err := h2.Test(); !done || err != nil {
			// Received means written.
			if err := h2.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		// Synchronous sends keep their order after asynchronous ones.
		h3 := a.SendAsync(1)
		go func() { _ = a.Send(2) }()
		for want := 1; want <= 2; want++ {
			if v, err := Recv[int](b); err != nil || v != want {
				t.Fatalf("order: got %d %v want %d", v, err, want)
			}
		}
		_ = h3.Wait()
	}
}

// A sender that stalls in the middle of a pipelined message: the receiver
// recovers what has arrived, waits, and finishes when the rest comes.
func TestPipelinedSenderStalls(t *testing.T) {
	a, b := pair(t, "tcp", Options{})
	v := make([]*Pair, 5000)
	for i := range v {
		v[i] = &Pair{int32(i), "value"}
	}
	msg, err := AppendEncode(nil, v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c := a.NetConn()
		_, _ = c.Write(msg[:len(msg)/2])
		time.Sleep(30 * time.Millisecond)
		_, _ = c.Write(msg[len(msg)/2:])
	}()
	got, err := Recv[[]*Pair](b)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("%v", err)
	}
	// A peer that dies mid-message: a clear error, no hang.
	go func() {
		_, _ = a.NetConn().Write(msg[:len(msg)/3])
		_ = a.NetConn().Close()
	}()
	if _, err := Recv[[]*Pair](b); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := Recv[int](b); err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after close: %v", err)
	}
}

func TestAsyncAfterClose(t *testing.T) {
	a, _ := pair(t, "unix", Options{})
	h := a.SendAsync(make([]byte, 8<<20))
	_ = a.Close()
	if err := h.Wait(); err == nil {
		t.Log("send completed before close") // allowed: the kernel may have taken it all
	}
	if err := a.SendAsync(1).Wait(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := a.Send(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// Generated is a type with every kind, for random values.
type Generated struct {
	A  int64
	B  bool
	C  string
	D  []float32
	E  *Generated
	F  map[int16]string
	G  [2]uint8
	H  []*Point
	I  []Pair
	J  *[3]int
	K  [][]byte
	L  float64
	M  uint32
	N  map[string]*Point
	Ok bool
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

func randGenerated(r *rand.Rand, depth int) *Generated {
	g := &Generated{A: r.Int64(), B: r.IntN(2) == 0, L: r.NormFloat64(), M: r.Uint32(), Ok: r.IntN(3) == 0}
	if r.IntN(2) == 0 {
		g.C = string(rune('a' + r.IntN(26)))
	}
	if n := r.IntN(5); n > 0 {
		g.D = make([]float32, n)
		for i := range g.D {
			g.D[i] = r.Float32()
		}
	}
	if depth < 3 && r.IntN(2) == 0 {
		g.E = randGenerated(r, depth+1)
	}
	if r.IntN(2) == 0 {
		g.F = map[int16]string{}
		for i := r.IntN(4); i > 0; i-- {
			g.F[int16(r.IntN(100))] = "v"
		}
	}
	g.G = [2]uint8{uint8(r.Uint32()), 1}
	for i := r.IntN(4); i > 0; i-- {
		if r.IntN(4) == 0 {
			g.H = append(g.H, nil)
		} else {
			g.H = append(g.H, &Point{r.Float64(), 1})
		}
	}
	for i := r.IntN(3); i > 0; i-- {
		g.I = append(g.I, Pair{r.Int32(), "x"})
	}
	if r.IntN(2) == 0 {
		g.J = &[3]int{r.Int(), 0, 1}
	}
	if r.IntN(2) == 0 {
		g.K = [][]byte{nil, {}, {1, 2}}
	}
	if r.IntN(2) == 0 {
		g.N = map[string]*Point{"a": {1, 2}, "nil": nil}
	}
	return g
}

func TestPropertyRandomValues(t *testing.T) {
	a, b := pair(t, "tcp", Options{Compact: true, Chunk: 128})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < 300; i++ {
		v := randGenerated(r, 0)
		errc := make(chan error, 1)
		go func() { errc <- a.Send(v) }()
		got, err := Recv[*Generated](b)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("value %d differs:\n got %#v\nwant %#v", i, got, v)
		}
		for _, o := range []Options{{}, {Sharing: true}} {
			msg, err := AppendEncode(nil, v, o)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := Decode[*Generated](msg, Limits{}); err != nil || !reflect.DeepEqual(got, v) {
				t.Fatalf("decode %d %+v: %v", i, o, err)
			}
		}
	}
	// testing/quick's generator for the pointer-free and slice kinds.
	type flat struct {
		A []int32
		B string
		C [4]float64
		D map[string]uint16
		E []string
	}
	f := func(x flat) bool {
		msg, err := AppendEncode(nil, x, Options{})
		if err != nil {
			return false
		}
		y, err := Decode[flat](msg, Limits{})
		return err == nil && reflect.DeepEqual(x, y)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}
