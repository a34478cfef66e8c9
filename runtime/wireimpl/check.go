package wireimpl

import (
	"errors"
	"strconv"
)

// ErrRequired: a decoded message lacks a proto2 required field. The
// *DecodeError that wraps it names the field.
var ErrRequired = errors.New("wire: required field missing")

// ErrOneof: a decoded message has more than one member of a oneof set.
// Cornflakes writers never produce it; the *DecodeError names the oneof.
var ErrOneof = errors.New("wire: more than one member of a oneof is set")

// MissingRequired fails the decode: the proto2 required field num (full
// name field, e.g. "pkg.Msg.id") is absent. Generated decode hooks call
// it after reading a message's fields.
func (d *Decoder) MissingRequired(num int, field string) {
	d.fail(&DecodeError{Off: d.start, Field: num, Reason: "required field " + field + " (" + strconv.Itoa(num) + ") is missing", Err: ErrRequired})
}

// OneofConflict fails the decode: more than one member of the oneof named
// oneof (full name) is present. Generated decode hooks call it.
func (d *Decoder) OneofConflict(oneof string) {
	d.fail(&DecodeError{Off: d.start, Reason: "more than one member of oneof " + oneof + " is set", Err: ErrOneof})
}

// Failed reports whether the decode has already failed (generated decode
// hooks skip their checks then).
func (d *Decoder) Failed() bool { return d.err != nil }

// CountSet returns how many of set are true (generated oneof checks use it).
func CountSet(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}
