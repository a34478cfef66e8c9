package wireimpl

import "unsafe"

// This file holds the package's uses of unsafe besides arena.go's
// (unsafe.Sizeof, and the per-Type slab pointers, each a *slab[T] of its
// Type's own T): zero-copy conversions between string and []byte. Neither
// side is ever written through.

// stringOf returns a string aliasing p (p must not be modified while the
// string is in use; wire never writes to field data).
func stringOf(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(p), len(p))
}

// bytesOf returns a read-only []byte aliasing s.
func bytesOf(s string) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// within reports whether p lies entirely inside outer, and p's offset in it.
func within(p, outer []byte) (int, bool) {
	if len(p) == 0 || len(outer) == 0 {
		return 0, false
	}
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	oa := uintptr(unsafe.Pointer(unsafe.SliceData(outer)))
	if pa < oa || pa-oa > uintptr(len(outer)) || uintptr(len(p)) > uintptr(len(outer))-(pa-oa) {
		return 0, false
	}
	return int(pa - oa), true
}
