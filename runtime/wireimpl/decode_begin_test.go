package wireimpl

import (
	"reflect"
	"testing"
)

// TestInitNewMatchesInit: InitNew on a Core holding anything (TryNewRaw's
// reused memory) leaves exactly what Core{} followed by Init leaves, with
// and without WriteTyped, at any epoch.
func TestInitNewMatchesInit(t *testing.T) {
	for _, typed := range []bool{false, true} {
		a := NewArena()
		a.WriteTyped = typed
		for range 3 {
			if err := a.Reset(); err != nil { // a later epoch
				t.Fatal(err)
			}
		}
		other := NewArena()
		dirty := Core{
			a: other, src: &source{}, has: 0xff, hasX: []uint64{1, 2},
			count: 7, words: 3, depth: 4, epoch: 99, uk: &typedOnly,
		}
		got := dirty
		got.InitNew(a)
		var want Core
		want.Init(a)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("WriteTyped=%v: InitNew left %+v, Core{}+Init %+v", typed, got, want)
		}
		if got.stale() {
			t.Fatalf("WriteTyped=%v: a Core just made by InitNew is stale", typed)
		}
		if typed != (got.uk != nil) {
			t.Fatalf("WriteTyped=%v: uk %v", typed, got.uk)
		}
	}
}
