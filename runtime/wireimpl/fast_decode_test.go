package wireimpl

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestBytesZeroCopyMatchesBytesEnt checks that the inlined cases
// (BytesCopied, then BytesZeroCopy) read every entry exactly as BytesEnt
// does, or decline it: values below, at and above the threshold, empty,
// at the end of the input, past it, with offsets and sizes near 2^32, for
// a registered input (BeginDecode's record and newSourceOf's), plain
// memory, and a record made by newSource (no zero-copy case).
func TestBytesZeroCopyMatchesBytesEnt(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	const size = 256
	in, err := p.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	data := in.Bytes()
	for i := range data {
		data[i] = byte(i)
	}
	const at = 0         // the entry is written at the start of the input
	ents := [][2]uint64{ // {offset, size}
		{8, 1}, {8, 15}, {8, 16}, {8, 17}, {8, size - 8}, {8, size - 7}, {size, 0}, {size - 1, 1},
		{size, 1}, {0, 0}, {100, 0}, {math.MaxUint32, 1}, {1, math.MaxUint32}, {math.MaxUint32, math.MaxUint32},
	}
	for _, thr := range []int{0, 1, 16, 64, CopyAll} {
		a := NewArena()
		a.Threshold = thr
		srcs := map[string]func() *Source{
			"BeginDecode": func() *Source {
				var c Core
				c.Init(a)
				s, err := c.BeginDecode(in)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			"newSourceOf": func() *Source { return a.newSourceOf(data, in.Slice(0, size)) },
			"plain":       func() *Source { return a.newSourceOf(append([]byte(nil), data...), mem.Buf{}) },
			"newSource": func() *Source {
				s := a.newSource()
				s.data, s.buf, s.thr = data, in, a.Threshold
				return s
			},
		}
		for name, mk := range srcs {
			for _, e := range ents {
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
				s := mk()
				binary.LittleEndian.PutUint64(s.data[at:], e[0]<<32|e[1])
				var want, got Bytes
				wantOK := s.BytesEnt(at, &want)
				gotOK := s.BytesCopied(at, &got) || s.BytesZeroCopy(at, &got)
				if !gotOK {
					continue // handed to BytesEnt
				}
				if !wantOK || string(got.data) != string(want.data) || cap(got.data) != cap(want.data) ||
					got.buf != want.buf {
					t.Errorf("thr %d %s entry %v: inline read %v/%v, BytesEnt %v/%v (ok %v)",
						thr, name, e, len(got.data), got.buf, len(want.data), want.buf, wantOK)
				}
			}
			// BytesRange + SetBytes (and SetString) read the entries the
			// older pair reads, exactly as BytesEnt does.
			for _, e := range ents {
				if err := a.Reset(); err != nil {
					t.Fatal(err)
				}
				s := mk()
				binary.LittleEndian.PutUint64(s.data[at:], e[0]<<32|e[1])
				var want, old, got Bytes
				wantOK := s.BytesEnt(at, &want)
				oldOK := s.BytesCopied(at, &old) || s.BytesZeroCopy(at, &old)
				o, k, zc, ok := s.BytesRange(at)
				if ok != oldOK {
					t.Errorf("thr %d %s entry %v: BytesRange ok %v, BytesCopied/BytesZeroCopy %v", thr, name, e, ok, oldOK)
				}
				if !ok {
					continue
				}
				s.SetBytes(&got, o, k, zc)
				var str String
				s.SetString(&str, o, k, zc)
				if !wantOK || string(got.data) != string(want.data) || cap(got.data) != cap(want.data) ||
					got.buf != want.buf || str.b.buf != got.buf || string(str.b.data) != string(got.data) || str.utf8s != utf8Unchecked {
					t.Errorf("thr %d %s entry %v: BytesRange+SetBytes %v/%v, BytesEnt %v/%v (ok %v)",
						thr, name, e, len(got.data), got.buf, len(want.data), want.buf, wantOK)
				}
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSourceZcFrom checks the records' zero-copy bound: max(thr, 1) for a
// registered input whose window is the record's data, MaxInt otherwise.
func TestSourceZcFrom(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{})
	in, err := p.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	a := NewArena()
	a.Threshold = 0
	if s := a.newSourceOf(in.Bytes(), in.Slice(0, 64)); s.zcFrom != 1 {
		t.Errorf("registered, threshold 0: zcFrom %d, want 1", s.zcFrom)
	}
	if s := a.newSourceOf(in.Bytes(), mem.Buf{}); s.zcFrom != math.MaxInt {
		t.Errorf("plain: zcFrom %d, want MaxInt", s.zcFrom)
	}
	if s := a.newSource(); s.zcFrom != math.MaxInt {
		t.Errorf("newSource: zcFrom %d, want MaxInt", s.zcFrom)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
}
