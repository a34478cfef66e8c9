package driver_test

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/wire"
)

// sized is an object that only reports sizes (a datapath's SendObject
// asks for nothing else before it serializes).
type sized wire.Sizes

func (s sized) Sizes() wire.Sizes                            { return wire.Sizes(s) }
func (s sized) Serialize(dst []byte, _ wire.EntrySink) error { return nil }

// A datapath's SendObject starts with CheckSendObject, so every datapath
// refuses the same objects with the same errors.
func ExampleCheckSendObject() {
	head := make([]byte, 16)
	_, size, err := driver.CheckSendObject(head, sized{Header: 8, Copied: 100}, 1500)
	fmt.Println(size, err)
	_, _, err = driver.CheckSendObject(head, sized{Copied: 2000}, 1500)
	fmt.Println(errors.Is(err, datapath.ErrTooLarge))
	_, _, err = driver.CheckSendObject(head, sized{Copied: -1}, 1500)
	fmt.Println(errors.Is(err, datapath.ErrBadObject))
	// Output:
	// 124 <nil>
	// true
	// true
}
