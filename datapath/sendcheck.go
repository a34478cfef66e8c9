package datapath

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/wire"
)

// MaxObjectEntries bounds the zero-copy entries of one object passed to
// SendObject; an object reporting more is refused with ErrBadObject.
const MaxObjectEntries = 1 << 14

// CheckSendObject is the precondition check every datapath runs at the start
// of SendObject, so that all of them refuse the same objects with the same
// errors. It is for datapath implementers; applications call SendObject.
//
// It asks obj for its sizes once and returns them with the packet's total
// size (len(head) + sizes.Total()). It returns an error wrapping
// ErrBadObject when a size is negative or the object has more than
// MaxObjectEntries zero-copy entries, and one wrapping ErrTooLarge when the
// total exceeds maxPayload (or overflows). It neither allocates on success
// nor touches the endpoint.
func CheckSendObject(head []byte, obj wire.Object, maxPayload int) (sz wire.Sizes, size int, err error) {
	sz = obj.Sizes()
	if sz.Header < 0 || sz.Copied < 0 || sz.ZeroCopy < 0 || sz.Entries < 0 {
		return sz, 0, fmt.Errorf("%w: negative sizes %+v", ErrBadObject, sz)
	}
	if sz.Entries > MaxObjectEntries {
		return sz, 0, fmt.Errorf("%w: %d zero-copy entries (limit %d)", ErrBadObject, sz.Entries, MaxObjectEntries)
	}
	size = len(head) + sz.Total()
	if size > maxPayload || size < 0 {
		return sz, 0, fmt.Errorf("%w: %d > %d", ErrTooLarge, size, maxPayload)
	}
	return sz, size, nil
}
