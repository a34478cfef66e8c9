package naos

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// flatB is a flat object with a bool between its strings.
type flatB struct {
	K int32
	B bool
	S string
	T string
}

// Sends with every staging size (off, the default, tiny, larger than a
// block) and with pipelining arrive intact: staging changes the send
// list, not the bytes.
func TestStagingRoundTrip(t *testing.T) {
	big := make([]float32, 5000)
	for i := range big {
		big[i] = float32(i)
	}
	type mixed struct {
		Name  string
		Data  []float32
		Pairs []*Pair
		Tags  []string
	}
	values := []any{
		everything(),
		benchPairs(5000),
		[]*Pair{nil, {1, ""}, {2, "x"}, nil},
		[]*flatB{{1, true, "a", ""}, nil, {2, false, "", "bb"}},
		[]*Point{{1, 2}, nil, {3, 4}},
		mixed{"m", big, benchPairs(300), []string{"a", "", "ccc"}},
		// Lengths of one, two and three uvarint bytes; strings below, at
		// and above the staging threshold.
		[]*Pair{{1, strings.Repeat("y", 127)}, {2, strings.Repeat("z", 128)}, {3, strings.Repeat("w", 129)}, {4, strings.Repeat("v", 70000)}, {5, "u"}},
		[]*flatB{{1, true, strings.Repeat("a", 200), "b"}, {2, false, "c", strings.Repeat("d", 20000)}},
	}
	for _, stage := range []int{-1, 0, 1, 24, 1 << 20} {
		for _, chunk := range []int{0, 4096} {
			for _, compact := range []bool{false, true} {
				for _, asIs := range []bool{false, true} {
					t.Run(fmt.Sprintf("stage=%d/chunk=%d/compact=%v/asIs=%v", stage, chunk, compact, asIs), func(t *testing.T) {
						a, b := pair(t, "tcp", Options{Stage: stage, Chunk: chunk, Compact: compact, asIs: asIs})
						for i, v := range values {
							errc := make(chan error, 1)
							go func() { errc <- a.Send(v) }()
							got := reflect.New(reflect.TypeOf(v))
							var err error
							switch w := got.Interface().(type) {
							case *Everything:
								*w, err = Recv[Everything](b)
							case *[]*Pair:
								*w, err = Recv[[]*Pair](b)
							case *[]*flatB:
								*w, err = Recv[[]*flatB](b)
							case *[]*Point:
								*w, err = Recv[[]*Point](b)
							case *mixed:
								*w, err = Recv[mixed](b)
							}
							if err != nil {
								t.Fatalf("value %d: %v", i, err)
							}
							if err := <-errc; err != nil {
								t.Fatalf("value %d: send: %v", i, err)
							}
							if !reflect.DeepEqual(got.Elem().Interface(), v) {
								t.Fatalf("value %d: got %#v, want %#v", i, got.Elem().Interface(), v)
							}
						}
					})
				}
			}
		}
	}
}

// RecvInto reuses an array of pointers to flat objects and the objects,
// when they are distinct consecutive objects (as Recv makes them), and
// falls back to new objects otherwise; the result is always the value
// sent.
func TestRecvIntoReusesFlatObjects(t *testing.T) {
	for _, o := range []Options{{}, {Compact: true}} {
		t.Run(fmt.Sprintf("compact=%v", o.Compact), func(t *testing.T) { testRecvIntoReusesFlatObjects(t, o) })
	}
}

func testRecvIntoReusesFlatObjects(t *testing.T, o Options) {
	a, b := pair(t, "tcp", o)
	send := func(v []*Pair) {
		t.Helper()
		if err := a.Send(v); err != nil {
			t.Fatal(err)
		}
	}
	send([]*Pair{{1, "a"}, {2, "bb"}, {3, "ccc"}})
	ps, err := Recv[[]*Pair](b)
	if err != nil {
		t.Fatal(err)
	}
	first, arr := ps[0], &ps[:1][0]
	steps := []struct {
		v           []*Pair
		sameObjects bool
	}{
		{[]*Pair{{4, ""}, nil, {5, "e"}}, true},         // fewer objects, an empty string over an old one
		{[]*Pair{{6, "f"}, {7, "g"}}, true},             // shorter
		{[]*Pair{{8, "h"}, {9, "i"}, {10, "j"}}, false}, // more objects than the last message left consecutive
		{[]*Pair{nil, nil}, false},
		{[]*Pair{}, false},
	}
	for i, s := range steps {
		send(s.v)
		if err := RecvInto(b, &ps); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !reflect.DeepEqual(ps, s.v) {
			t.Fatalf("step %d: got %v, want %v", i, ps, s.v)
		}
		if &ps[:1][0] != arr {
			t.Fatalf("step %d: a new pointer array", i)
		}
		if s.sameObjects && ps[0] != first {
			t.Fatalf("step %d: objects not reused", i)
		}
		if s.sameObjects {
			continue
		}
		for _, p := range ps {
			if p == first {
				t.Fatalf("step %d: an object reused beyond the old run", i)
			}
		}
	}
	// Elements sharing one object are not consecutive objects: the new
	// value must not share it.
	shared := &Pair{1, "s"}
	ps = []*Pair{shared, shared}
	send([]*Pair{{2, "x"}, {3, "y"}})
	if err := RecvInto(b, &ps); err != nil {
		t.Fatal(err)
	}
	if ps[0] == ps[1] || !reflect.DeepEqual(ps, []*Pair{{2, "x"}, {3, "y"}}) || *shared != (Pair{1, "s"}) {
		t.Fatalf("shared old objects: got %v (%p %p)", ps, ps[0], ps[1])
	}
	// Every element non-nil, over distinct consecutive objects: each
	// element keeps its object (in place), and elements past the new
	// length are cleared.
	send([]*Pair{{1, "a"}, {2, "b"}, {3, "c"}})
	if ps, err = Recv[[]*Pair](b); err != nil {
		t.Fatal(err)
	}
	old := append([]*Pair(nil), ps...)
	for i, s := range [][]*Pair{{{4, "d"}, {5, ""}, {6, "f"}}, {{7, "g"}, {8, "h"}}} {
		send(s)
		if err := RecvInto(b, &ps); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ps, s) {
			t.Fatalf("in place %d: got %v, want %v", i, ps, s)
		}
		for j := range ps {
			if ps[j] != old[j] {
				t.Fatalf("in place %d: element %d has another object", i, j)
			}
		}
		if full := ps[:cap(ps)]; len(s) < len(old) && full[len(s)] != nil {
			t.Fatalf("in place %d: element %d past the length not cleared", i, len(s))
		}
	}
}

// A reused array of pointers to pairs allocates only the strings' chunks
// per message.
func TestRecvIntoFlatAllocs(t *testing.T) {
	a, b := pair(t, "tcp", Options{})
	var v any = benchPairs(512) // 5-byte strings: under one string chunk per message
	var w []*Pair
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
	if err := RecvInto(b, &w); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(n, func() {
		if err := RecvInto(b, &w); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("%v allocations per RecvInto of 512 pairs, want at most 1 (a string chunk)", allocs)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w, v) {
		t.Fatal("received pairs differ")
	}
}

// Arrays of pointers to small pointer-free objects are reused the same
// way.
func TestRecvIntoReusesPointObjects(t *testing.T) {
	a, b := pair(t, "tcp", Options{})
	if err := a.Send([]*Point{{1, 2}, {3, 4}}); err != nil {
		t.Fatal(err)
	}
	ps, err := Recv[[]*Point](b)
	if err != nil {
		t.Fatal(err)
	}
	first := ps[0]
	want := []*Point{nil, {5, 6}}
	if err := a.Send(want); err != nil {
		t.Fatal(err)
	}
	if err := RecvInto(b, &ps); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ps, want) || ps[1] != first {
		t.Fatalf("got %v (reused %v)", ps, ps[1] == first)
	}
}
