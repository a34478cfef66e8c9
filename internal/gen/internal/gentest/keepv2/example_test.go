package keepv2_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/keepv1"
	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/keepv2"
	"github.com/cornflakes-go/cornflakes/wire"
)

// A v2 writer sends a typed message (Arena.WriteTyped) through a proxy
// generated from the older v1 schema; the proxy changes a field it knows,
// and the v2 reader receives the fields the proxy does not know intact.
func Example_proxy() {
	wa := wire.NewArena()
	wa.WriteTyped = true // before New: the messages write the typed form
	msg := keepv2.NewRec(wa)
	msg.SetId(1)
	msg.SetNote("v2 only")
	msg.InitInner().SetS("nested, v2 only")
	in, _ := wire.Flatten(msg, nil)

	// The v1 proxy.
	pa := wire.NewArena()
	p := keepv1.NewRec(pa)
	if err := p.DecodeBytes(in); err != nil {
		panic(err)
	}
	fmt.Println("proxy keeps fields", p.WireCore().UnknownNums(nil))
	p.SetId(2)
	out, _ := wire.Flatten(p, nil)

	// The v2 reader.
	r := keepv2.NewRec(wire.NewArena())
	if err := r.DecodeBytes(out); err != nil {
		panic(err)
	}
	note, _ := r.GetNote()
	inner, _ := r.GetInner()
	s, _ := inner.GetS()
	fmt.Println(r.GetId(), note, s)
	// Output:
	// proxy keeps fields [5 40]
	// 2 v2 only nested, v2 only
}
