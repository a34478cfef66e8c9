package samepkg_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/samepkg"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestSamePackage checks two .proto files generated into one Go package,
// one using the other's message.
func TestSamePackage(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	x := samepkg.NewB(a)
	x.InitA().InitNames(1).Append("n")
	as := x.InitAs(2)
	for range 2 {
		e := samepkg.NewA(a)
		e.SetData(nil) // explicit presence: present though empty
		as.Append(e)
	}
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := samepkg.NewB(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) {
		t.Fatalf("got %v, want %v", y, x)
	}
	if got, want := y.String(), `B{a:A{names:["n"]} as:[A{data:""} A{data:""}]}`; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
}
