package driver

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/wire"
)

// CheckSendObject is the precondition check every datapath runs at the start
// of SendObject, so that all of them refuse the same objects with the same
// errors. It is for datapath implementers; applications call SendObject.
//
// It asks obj for its sizes once and returns them with the packet's total
// size (len(head) + sizes.Total()). It returns an error wrapping
// datapath.ErrBadObject when a size is negative or the object has more than
// datapath.MaxObjectEntries zero-copy entries, and one wrapping datapath.ErrTooLarge when the
// total exceeds maxPayload (or overflows). It neither allocates on success
// nor touches the endpoint.
func CheckSendObject(head []byte, obj wire.Object, maxPayload int) (sz wire.Sizes, size int, err error) {
	sz = obj.Sizes()
	if sz.Header < 0 || sz.Copied < 0 || sz.ZeroCopy < 0 || sz.Entries < 0 {
		return sz, 0, fmt.Errorf("%w: negative sizes %+v", datapath.ErrBadObject, sz)
	}
	if sz.Entries > datapath.MaxObjectEntries {
		return sz, 0, fmt.Errorf("%w: %d zero-copy entries (limit %d)", datapath.ErrBadObject, sz.Entries, datapath.MaxObjectEntries)
	}
	size = len(head) + sz.Total()
	if size > maxPayload || size < 0 {
		return sz, 0, fmt.Errorf("%w: %d > %d", datapath.ErrTooLarge, size, maxPayload)
	}
	return sz, size, nil
}
