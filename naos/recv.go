package naos

import (
	"reflect"
	"unsafe"
)

// Recv receives the next message on k as a value of type T. The message's
// fingerprint must be T's (else *MismatchError naming both types); every
// length, pointer and type id in it is checked before the receiver
// allocates or stores anything, within k's Limits (else an error wrapping
// ErrFormat). io.EOF means the peer closed the stream between messages.
//
// After an error other than *MismatchError the stream's position is
// unknown: close the Conn.
func Recv[T any](k *Conn) (T, error) {
	var v T
	err := RecvInto(k, &v)
	return v, err
}

// RecvInto receives the next message on k into *dst, as Recv does, and
// reuses *dst's memory where it can: if T is a slice of pointer-free
// elements ([]float32, []Point) and cap(*dst) is at least the received
// length, the elements land in *dst's backing array (resliced to the new
// length; capacity kept) with one read and nothing is allocated for them.
// If T is a slice of pointers to flat structs (whose only pointer-holding
// fields are strings, such as struct{K int32; V string}) or to pointer-free
// values of at most 128 bytes, and cap(*dst)
// holds the received length, the pointer array is reused, and so are the
// objects its elements point to if they are distinct objects at
// consecutive addresses (as Recv allocates them) and enough of them; the
// strings are always new. Everything else is allocated as by Recv; the
// previous value of *dst is dropped.
//
// The caller owns *dst's backing array and, for a slice of pointers to
// flat structs, the objects its elements point to: nothing else may read
// or write them during the call, and whoever else still holds them sees
// them overwritten.
// On error *dst is the zero value of T and the old backing array's
// contents are unspecified (they are valid values of the element type).
// Errors are those of Recv.
func RecvInto[T any](k *Conn, dst *T) error {
	p, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return err
	}
	k.recvMu.Lock()
	defer k.recvMu.Unlock()
	return decodeInto(&k.dec, dst, p)
}

// decodeInto is RecvInto on decoder d, whose reader is positioned at a
// message.
func decodeInto[T any](d *decoder, dst *T, p *plan) error {
	old := *dst
	var zero T
	*dst = zero
	if p.kind == kSlice && (p.elem.ptrFree && p.elem.size > 0 || p.elem.kind == kPtr && p.elem.elem.flat) {
		h := (*sliceHeader)(unsafe.Pointer(&old))
		if h.cap > 0 {
			d.reuseAt, d.reuseData, d.reuseCap, d.reuseLen = unsafe.Pointer(dst), h.data, h.cap, h.len
		}
	}
	err := d.decode(unsafe.Pointer(dst), p)
	d.reuseAt, d.reuseData, d.reuseCap, d.reuseLen, d.flatReuse = nil, nil, 0, 0, false
	clear(d.reuseObjs)
	d.reuseObjs = d.reuseObjs[:0]
	if err != nil {
		*dst = zero
	}
	return err
}
