package wireimpl

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestPutOneCopied checks the inlined writer of a one-element list: the
// element's entry at lh, the list's entry at `at` and the value at cp; and
// that it writes nothing and reports false when the list no longer holds
// one element or a region does not fit (what a data race between the
// sizes and the write could make).
func TestPutOneCopied(t *testing.T) {
	a := NewArena()
	defer a.Reset()
	var l BytesList
	l.Init(a, 2)
	l.Append([]byte("value"))
	if k, ok := l.OneCopied(); !ok || k != 5 {
		t.Fatalf("OneCopied = %d, %v; want 5, true", k, ok)
	}
	// at 8 (after a one-word bitmap), lh 16, hdr 24, cp 24, head 29.
	dst := make([]byte, 29)
	cp, ok := l.PutOneCopied(dst, 8, 16, 24, 24)
	if !ok || cp != 29 {
		t.Fatalf("PutOneCopied = %d, %v; want 29, true", cp, ok)
	}
	if e := binary.LittleEndian.Uint64(dst[16:]); e != 5|24<<32 {
		t.Fatalf("element entry %#x", e)
	}
	if e := binary.LittleEndian.Uint64(dst[8:]); e != 1|16<<32 {
		t.Fatalf("list entry %#x", e)
	}
	if !bytes.Equal(dst[24:], []byte("value")) {
		t.Fatalf("value %q", dst[24:])
	}
	for _, tc := range []struct {
		name            string
		dst             int
		at, lh, hdr, cp int
	}{
		{"value past the head", 28, 8, 16, 24, 24},
		{"entry past the header region", 29, 8, 20, 24, 24},
		{"negative entry", 29, 8, -8, 24, 24},
	} {
		dst := make([]byte, tc.dst)
		if cp, ok := l.PutOneCopied(dst, tc.at, tc.lh, tc.hdr, tc.cp); ok || cp != tc.cp || !bytes.Equal(dst, make([]byte, tc.dst)) {
			t.Fatalf("%s: PutOneCopied = %d, %v, wrote %x; want nothing", tc.name, cp, ok, dst)
		}
	}
	l.Append([]byte("second"))
	if _, ok := l.OneCopied(); ok {
		t.Fatal("OneCopied true for two elements")
	}
	if cp, ok := l.PutOneCopied(make([]byte, 64), 8, 16, 24, 24); ok || cp != 24 {
		t.Fatalf("two elements: PutOneCopied = %d, %v; want 24, false", cp, ok)
	}
}
