package wkt_test

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wkt"
)

// Timestamps and Durations convert to and from time.Time and time.Duration.
func ExampleTimestamp_AsTime() {
	a := wire.NewArena()
	defer a.Reset()
	ts := wkt.NewTimestampAt(a, time.Date(2026, 11, 28, 1, 2, 3, 4, time.UTC))
	d := wkt.NewDurationOf(a, -1500*time.Millisecond)
	fmt.Println(ts.AsTime(), ts.CheckValid())
	fmt.Println(d.GetSeconds(), d.GetNanos(), d.AsDuration())
	// Output:
	// 2026-11-28 01:02:03.000000004 +0000 UTC <nil>
	// -1 -500000000 -1.5s
}

// A Struct is a map of Values; Value is a oneof.
func ExampleStruct() {
	a := wire.NewArena()
	defer a.Reset()
	s := wkt.NewStruct(a)
	f, _ := s.GetFields()
	f.Init("n").SetNumberValue(2)
	f.Init("s").SetStringValue("x")
	p, _ := wire.Flatten(s, nil)

	t := wkt.NewStruct(a)
	if err := t.DecodeBytes(p); err != nil {
		fmt.Println(err)
		return
	}
	g, _ := t.GetFields()
	v, _, _ := g.Get("s")
	fmt.Println(g.Len(), v.WhichKind() == wkt.Value_StringValue_case)
	// Output:
	// 2 true
}
