// Package fingerprint computes J-RPC-style structural fingerprints of
// Cornflakes message types and service methods: 64-bit hashes that are
// equal, with very high probability, only for structurally equal types
// (the same field numbers, kinds and cardinalities, and nested types of
// equal fingerprints), whatever their names. The generator records them in
// generated service descriptors; the service package checks them at bind
// time. The algorithm is fixed: a change would change every recorded
// value, and golden tests pin them.
package fingerprint

import (
	"encoding/binary"
	"hash/fnv"
)

// Field describes one field of a message.
type Field struct {
	Number   uint32
	Name     string // for error messages only: not part of the fingerprint
	Kind     uint8  // the protobuf kind number (FieldDescriptorProto.Type: 1 double ... 18 sint64)
	Repeated bool
	Message  int // for message fields the index of its type in the message table; -1 otherwise
}

// Message describes a message: its fields in ascending number order.
type Message struct {
	Name        string // full protobuf name, for error messages only
	Fields      []Field
	Fingerprint uint64 // Of(table, i), as recorded by the generator
}

// Kind numbers with a special role.
const (
	KindGroup   = 10
	KindMessage = 11
	MaxKind     = 18
)

// Of is the fingerprint of msgs[i]: FNV-1a over its fields in number
// order, each as (number, kind, repeated) and, for a message field, the
// fingerprint of its type; a type already being hashed further up (a
// recursive reference) counts as its depth on that stack instead.
func Of(msgs []Message, i int) uint64 {
	return of(msgs, i, nil)
}

func of(msgs []Message, i int, stack []int) uint64 {
	h := fnv.New64a()
	var b [16]byte
	_, _ = h.Write([]byte("cornflakes.message\x00"))
	stack = append(stack, i)
	for _, f := range msgs[i].Fields {
		binary.LittleEndian.PutUint32(b[:], f.Number)
		b[4], b[5] = f.Kind, 0
		if f.Repeated {
			b[5] = 1
		}
		_, _ = h.Write(b[:6])
		if f.Message < 0 {
			continue
		}
		back := -1
		for d := range stack {
			if stack[len(stack)-1-d] == f.Message {
				back = d
				break
			}
		}
		if back >= 0 {
			b[0] = 0xFF
			binary.LittleEndian.PutUint32(b[1:], uint32(back))
			_, _ = h.Write(b[:5])
			continue
		}
		b[0] = 0xFE
		binary.LittleEndian.PutUint64(b[1:], of(msgs, f.Message, stack))
		_, _ = h.Write(b[:9])
	}
	return h.Sum64()
}

// Method is the fingerprint of a method: a hash of its full name
// ("/pkg.Service/Method") and its request and response fingerprints.
func Method(fullMethod string, req, resp uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("cornflakes.method\x00" + fullMethod + "\x00"))
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], req)
	binary.LittleEndian.PutUint64(b[8:], resp)
	_, _ = h.Write(b[:])
	return h.Sum64()
}
