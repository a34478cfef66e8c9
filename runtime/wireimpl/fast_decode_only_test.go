package wireimpl

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestDecodeOnlyCommonCase holds DecodeOnly (whose common case is a path
// of its own) to decodeOnlyGen, the general code, on inputs around that
// case: the one-word header of the list alone, then entries whose counts,
// offsets and value ranges are valid, at the edges, out of range or
// random, and other header forms. Both must leave the same list and
// report the same results; the test fails unless the common case and the
// general one each decided enough of them.
func TestDecodeOnlyCommonCase(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 12))
	a := NewArena()
	common, other := 0, 0
	for i := range 20000 {
		num := 1 + r.IntN(32)
		bit := uint32(1) << (num - 1)
		p := onlyInput(r, bit)
		src := a.newSourceOf(p, a.in) // an unregistered input: the zero Buf
		var got, want BytesList
		// Dirty lists: both must write every field.
		got.tok, got.vep, want.tok, want.vep = true, 9, true, 9
		okG, errG := src.DecodeOnly(num, bit, &got)
		okW, errW := src.decodeOnlyGen(num, bit, &want)
		if okG != okW || (errG == nil) != (errW == nil) || (errG != nil && errG.Error() != errW.Error()) {
			t.Fatalf("case %d (% x): DecodeOnly %v, %v; decodeOnlyGen %v, %v", i, p, okG, errG, okW, errW)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d (% x): DecodeOnly left %+v, decodeOnlyGen %+v", i, p, got, want)
		}
		if okG && errG == nil && len(p) >= 16 && binary.LittleEndian.Uint64(p) == 1|uint64(bit)<<32 && got.lz.n != 0 {
			common++
		} else {
			other++
		}
		if i%100 == 99 {
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if common < 2000 || other < 2000 {
		t.Fatalf("%d inputs decoded by the common case, %d otherwise: too few of one", common, other)
	}
}

// onlyInput returns an input for DecodeOnly of the list with bitmap bit:
// mostly the one-word header of the list alone and an entry (n, off) near
// the valid ones, sometimes another header or random bytes, truncated at
// times.
func onlyInput(r *rand.Rand, bit uint32) []byte {
	if r.IntN(10) == 0 { // random bytes
		p := make([]byte, r.IntN(64))
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		return p
	}
	n := r.IntN(6)
	if r.IntN(20) == 0 {
		n = MaxListLen + r.IntN(3) - 1
	}
	vals := 16 + 8*min(n, 8)
	size := vals + r.IntN(40)
	p := make([]byte, size)
	w0 := bit
	if r.IntN(8) == 0 {
		w0 |= r.Uint32() // other fields present too: not the one-word case
	}
	binary.LittleEndian.PutUint64(p, 1|uint64(w0)<<32)
	off := 16
	switch r.IntN(8) {
	case 0:
		off = r.IntN(size + 8)
	case 1:
		off = 15
	}
	binary.LittleEndian.PutUint64(p[8:], uint64(off)<<32|uint64(uint32(n)))
	for i := 0; i < min(n, 8) && 16+8*i+8 <= len(p); i++ { // the entries: (length, offset) of each value
		o, k := vals+r.IntN(size-vals+1), r.IntN(12)
		if r.IntN(6) == 0 {
			k = r.IntN(1 << 10) // often out of range
		}
		binary.LittleEndian.PutUint64(p[16+8*i:], uint64(o)<<32|uint64(k))
	}
	if r.IntN(8) == 0 {
		p = p[:r.IntN(len(p)+1)]
	}
	return p
}

// FuzzDecodeOnly is TestDecodeOnlyCommonCase over arbitrary inputs and
// field numbers.
func FuzzDecodeOnly(f *testing.F) {
	r := rand.New(rand.NewPCG(28, 13))
	for range 32 {
		num := 1 + r.IntN(32)
		f.Add(onlyInput(r, uint32(1)<<(num-1)), uint8(num-1))
	}
	a := NewArena()
	f.Fuzz(func(t *testing.T, p []byte, num8 uint8) {
		num := 1 + int(num8)%32
		bit := uint32(1) << (num - 1)
		src := a.newSourceOf(p, a.in)
		var got, want BytesList
		got.tok, want.tok = true, true
		okG, errG := src.DecodeOnly(num, bit, &got)
		okW, errW := src.decodeOnlyGen(num, bit, &want)
		if okG != okW || (errG == nil) != (errW == nil) || (errG != nil && errG.Error() != errW.Error()) {
			t.Fatalf("DecodeOnly %v, %v; decodeOnlyGen %v, %v", okG, errG, okW, errW)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeOnly left %+v, decodeOnlyGen %+v", got, want)
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	})
}
