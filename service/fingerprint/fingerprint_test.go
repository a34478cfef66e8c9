package fingerprint_test

import (
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/service/fingerprint"
)

// Names do not count, structure does; recursion terminates.
func ExampleOf() {
	a := []fingerprint.Message{{Name: "a.Node", Fields: []fingerprint.Field{
		{Number: 1, Name: "value", Kind: 3, Message: -1},
		{Number: 2, Name: "kids", Kind: fingerprint.KindMessage, Repeated: true, Message: 0},
	}}}
	b := []fingerprint.Message{{Name: "b.Tree", Fields: []fingerprint.Field{
		{Number: 1, Name: "v", Kind: 3, Message: -1},
		{Number: 2, Name: "children", Kind: fingerprint.KindMessage, Repeated: true, Message: 0},
	}}}
	fmt.Println(fingerprint.Of(a, 0) == fingerprint.Of(b, 0))
	b[0].Fields[0].Kind = 4 // int64 -> uint64
	fmt.Println(fingerprint.Of(a, 0) == fingerprint.Of(b, 0))
	fmt.Printf("%#016x\n", fingerprint.Of(a, 0))
	// Output:
	// true
	// false
	// 0xceefa64ef2b05ab5
}

// TestGolden pins the algorithm on small tables: any change to it changes
// every recorded fingerprint, so it must show here.
func TestGolden(t *testing.T) {
	empty := []fingerprint.Message{{}}
	two := []fingerprint.Message{
		{Fields: []fingerprint.Field{{Number: 1, Kind: 9, Message: -1}, {Number: 5, Kind: fingerprint.KindMessage, Message: 1}}},
		{Fields: []fingerprint.Field{{Number: 3, Kind: 12, Repeated: true, Message: -1}}},
	}
	for _, tc := range []struct {
		name string
		got  uint64
		want uint64
	}{
		{"empty", fingerprint.Of(empty, 0), 0xeca5bab3da700998},
		{"nested outer", fingerprint.Of(two, 0), 0x884ad6ba1bb7631f},
		{"nested inner", fingerprint.Of(two, 1), 0x663edca1d43f772c},
		{"method", fingerprint.Method("/p.S/M", fingerprint.Of(two, 0), fingerprint.Of(two, 1)), 0xd5a8ea849710c661},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %#016x, want %#016x", tc.name, tc.got, tc.want)
		}
	}
}
