package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/wire"
)

func ent(lo, hi int) uint64 { return uint64(uint32(lo)) | uint64(uint32(hi))<<32 }

// TestCopyTypedKinds copies a typed object with the list kinds (bools, an
// out-of-line list of 32-bit scalars, bytes, messages) and checks the
// canonical layout field by field.
func TestCopyTypedKinds(t *testing.T) {
	le := binary.LittleEndian
	elem, _ := wire.AppendTypedHeader(nil, []wire.TypedField{{Num: 1, Kind: wire.KindScalar, Entry: 5}})
	p, err := wire.AppendTypedHeader(nil, []wire.TypedField{
		{Num: 1, Kind: wire.KindList1, Entry: ent(3, 44)},
		{Num: 2, Kind: wire.KindList4, Entry: ent(2|wire.PackedFlag, 91)},
		{Num: 3, Kind: wire.KindBytesList, Entry: ent(2, 47)},
		{Num: 4, Kind: wire.KindMessageList, Entry: ent(1, 63)},
	})
	if err != nil || len(p) != 44 {
		t.Fatalf("fixed part %d, %v", len(p), err)
	}
	p = append(p, 1, 0, 1)                        // 44: bools
	p = le.AppendUint64(p, ent(2, 99))            // 47: "ab"
	p = le.AppendUint64(p, ent(1, 101))           // 55: "c"
	p = le.AppendUint64(p, ent(len(elem), 71))    // 63: element 0
	p = append(p, elem...)                        // 71
	p = le.AppendUint32(le.AppendUint32(p, 7), 8) // 91: out of line [7, 8]
	p = append(p, "abc"...)                       // 99
	out, err := wire.CopyTyped([]byte("prefix"), p, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:6]) != "prefix" {
		t.Fatal("dst prefix lost")
	}
	out = out[6:]
	fs, _, err := wire.ReadTypedHeader(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{ent(3, 44), ent(2, 47), ent(2, 55), ent(1, 71)}
	for i, f := range fs {
		if f.Entry != want[i] {
			t.Errorf("field %d: entry %x, want %x", f.Num, f.Entry, want[i])
		}
	}
	if !bytes.Equal(out[44:47], []byte{1, 0, 1}) || le.Uint32(out[47:]) != 7 || le.Uint32(out[51:]) != 8 {
		t.Error("list regions")
	}
	if le.Uint64(out[55:]) != ent(2, 99) || le.Uint64(out[63:]) != ent(1, 101) || le.Uint64(out[71:]) != ent(20, 79) {
		t.Error("list entries")
	}
	if !bytes.Equal(out[79:99], elem) || string(out[99:]) != "abc" || len(out) != 102 {
		t.Errorf("element or values: %x", out[79:])
	}
	again, err := wire.CopyTyped(nil, out, 1<<10)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("a copy is not canonical: %v", err)
	}
	// Errors leave dst unchanged.
	dst := []byte("x")
	if got, err := wire.CopyTyped(dst, p[:50], 1<<10); !errors.Is(err, wire.ErrMalformed) || string(got) != "x" {
		t.Fatalf("truncated: %q %v", got, err)
	}
}

// TestAppendTypedHeaderErrors: invalid fields are refused.
func TestAppendTypedHeaderErrors(t *testing.T) {
	for name, fs := range map[string][]wire.TypedField{
		"descending": {{Num: 2, Kind: 1}, {Num: 1, Kind: 1}},
		"zero num":   {{Num: 0, Kind: 1}},
		"too large":  {{Num: wire.MaxSparseFieldNumber + 1, Kind: 1}},
		"kind 0":     {{Num: 1}},
		"kind 9":     {{Num: 1, Kind: 9}},
	} {
		if _, err := wire.AppendTypedHeader(nil, fs); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// ReadTypedHeader lists the fields of a typed header with their kinds.
func ExampleReadTypedHeader() {
	p, _ := wire.AppendTypedHeader(nil, []wire.TypedField{
		{Num: 1, Kind: wire.KindScalar, Entry: 42},
		{Num: 70000, Kind: wire.KindBytes, Entry: ent(0, 0)},
	})
	fs, n, err := wire.ReadTypedHeader(p, nil)
	fmt.Println(len(p), n, err)
	for _, f := range fs {
		fmt.Println(f.Num, f.Kind, f.Entry)
	}
	// Output:
	// 32 32 <nil>
	// 1 1 42
	// 70000 2 0
}

// CopyTyped moves a typed object, whatever fields it has, into a fresh
// canonical layout without knowing its schema.
func ExampleCopyTyped() {
	p, _ := wire.AppendTypedHeader(nil, []wire.TypedField{
		{Num: 3, Kind: wire.KindBytes, Entry: ent(5, 20+4)}, // "hello", after 4 bytes of gap
	})
	p = append(p, "gap!hello"...)
	c, err := wire.CopyTyped(nil, p, 1<<10)
	fmt.Println(len(p), len(c), err)
	fmt.Printf("%q\n", c[20:])
	// Output:
	// 29 25 <nil>
	// "hello"
}
