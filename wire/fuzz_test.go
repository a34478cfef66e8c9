package wire_test

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/wire"
)

// FuzzHeader checks the header codec: whatever ReadHeader accepts,
// AppendHeader re-encodes to a header that reads back the same fields, and
// is byte-identical when the input used the minimal bitmap.
func FuzzHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	// The sparse form (field numbers 1 and 65537).
	f.Add([]byte{2, 0, 0, 0x80, 1, 0, 0, 0, 1, 0, 1, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		fields, size, err := wire.ReadHeader(p, nil)
		if err != nil {
			if size != 0 || len(fields) != 0 {
				t.Fatalf("error %v with size %d and %d fields", err, size, len(fields))
			}
			return
		}
		if size > len(p) || size < 4 {
			t.Fatalf("size %d for input %d", size, len(p))
		}
		out, err := wire.AppendHeader(nil, fields)
		if err != nil {
			t.Fatalf("AppendHeader of read fields: %v", err)
		}
		again, size2, err := wire.ReadHeader(out, nil)
		if err != nil || size2 != len(out) || len(again) != len(fields) {
			t.Fatalf("re-read: %v, %d/%d, %d/%d fields", err, size2, len(out), len(again), len(fields))
		}
		for i := range fields {
			if fields[i] != again[i] {
				t.Fatalf("field %d: %+v != %+v", i, fields[i], again[i])
			}
		}
		if len(out) == size && !bytes.Equal(out, p[:size]) {
			t.Fatalf("minimal header not byte-identical:\n%x\n%x", out, p[:size])
		}
	})
}
