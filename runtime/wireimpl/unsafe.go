package wireimpl

import (
	"encoding/binary"
	"runtime"
	"unsafe"
)

// This file holds the package's uses of unsafe besides arena.go's
// (unsafe.Sizeof, and the per-Type slab pointers, each a *slab[T] of its
// Type's own T): zero-copy conversions between string and []byte, and
// header entries read as words (wordsInRange, entryWord). Nothing is ever
// written through them.

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

// unalignedLoads: the platform loads a uint64 from any address.
const unalignedLoads = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" || runtime.GOARCH == "386" ||
	runtime.GOARCH == "ppc64le" || runtime.GOARCH == "s390x"

// leUnaligned: a little-endian platform with unaligned loads, as a
// constant (nativeLE is a variable: testing it costs a load and a branch).
const leUnaligned = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" || runtime.GOARCH == "386" ||
	runtime.GOARCH == "ppc64le"

// wordLoads reports whether p's entries may be read as native words by
// wordsInRange: a little-endian platform, and p 8-byte aligned or a
// platform with unaligned loads.
func wordLoads(p []byte) bool {
	return leUnaligned || nativeLE && (unalignedLoads || uintptr(unsafe.Pointer(unsafe.SliceData(p)))%EntrySize == 0)
}

// entryWord returns entry i of ents (whole entries, bounds-checked by the
// caller once for the loop): a word load where the platform allows it,
// else a checked little-endian read. Small enough to be inlined.
func entryWord(ents []byte, i int) uint64 {
	if leUnaligned {
		return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(ents)), i*EntrySize))
	}
	return binary.LittleEndian.Uint64(ents[i*EntrySize:])
}

// wordsInRange is entsInRange's loop over the n entries at p (n whole
// entries of one slice, which wordLoads accepted): no per-entry bounds
// check.
func wordsInRange(p unsafe.Pointer, n int, size uint64) bool {
	for i := range n {
		e := *(*uint64)(unsafe.Add(p, i*EntrySize))
		if e>>32+e&0xffffffff > size && uint32(e) != 0 {
			return false
		}
	}
	return true
}
