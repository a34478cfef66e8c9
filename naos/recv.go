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
	p, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return v, err
	}
	k.recvMu.Lock()
	defer k.recvMu.Unlock()
	err = k.dec.decode(unsafe.Pointer(&v), p)
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
