package samepkg_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/samepkg"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

func sgaBytes(s *wire.SGA) []byte {
	out := append([]byte(nil), s.Head...)
	for _, e := range s.Entries {
		out = append(out, e.Bytes()...)
	}
	return out
}

// TestDirectStringList: A (a list of strings and optional bytes) is on the
// direct Sizes and Serialize path; its bytes equal the Encoder path's
// (Flatten) for lists mixing copied, zero-copy and empty strings, it
// decodes back, and a list changed between Sizes and Serialize is refused
// with ErrModified.
func TestDirectStringList(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{'z'}, 600))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer a.Reset()

	for _, pattern := range []string{"c", "z", "e", "czecz", "zzz", "ccccccccc", "ez"} {
		x := samepkg.NewA(a)
		l := x.InitNames(len(pattern))
		for i, k := range pattern {
			switch k {
			case 'c':
				l.Append(string(rune('a' + i)))
			case 'z':
				l.AppendBuf(zc)
			case 'e':
				l.Append("")
			}
		}
		x.SetData([]byte("d"))
		want, err := wire.Flatten(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		var sga wire.SGA
		if err := wire.SerializeSGA(x, &sga); err != nil {
			t.Fatalf("%s: SerializeSGA: %v", pattern, err)
		}
		if got := sgaBytes(&sga); !bytes.Equal(got, want) {
			t.Fatalf("%s: direct bytes differ from Flatten:\n got %x\nwant %x", pattern, got, want)
		}
		if n := x.Sizes().Entries; len(sga.Entries) != n {
			t.Fatalf("%s: %d SGA entries, Sizes says %d", pattern, len(sga.Entries), n)
		}
		y := samepkg.NewA(a)
		if err := y.DecodeBytes(want); err != nil {
			t.Fatal(err)
		}
		if !x.Equal(y) {
			t.Fatalf("%s: decoded %v, want %v", pattern, y, x)
		}
	}

	for name, change := range map[string]func(*wire.StringList){
		"appended":            func(l *wire.StringList) { l.Append("x") },
		"longer":              func(l *wire.StringList) { l.Truncate(1); l.Append("a longer string") },
		"copied to zero-copy": func(l *wire.StringList) { l.Truncate(1); l.AppendBuf(zc) },
		"emptied":             func(l *wire.StringList) { l.Truncate(0) },
	} {
		x := samepkg.NewA(a)
		l := x.InitNames(2)
		l.AppendBuf(zc)
		l.Append("v1")
		sz := x.Sizes()
		change(l)
		sga := wire.SGA{Head: make([]byte, sz.Head())}
		if err := x.Serialize(sga.Head, &sga); !errors.Is(err, wire.ErrModified) {
			t.Fatalf("%s: Serialize after the change: %v, want ErrModified", name, err)
		}
	}
}

// FuzzDirectA decodes arbitrary bytes as an A (list of strings) and, when
// they decode, requires the direct Serialize (SerializeSGA) and the
// Encoder path (Flatten) to write the same bytes.
func FuzzDirectA(f *testing.F) {
	a := wire.NewArena()
	x := samepkg.NewA(a)
	l := x.InitNames(3)
	l.Append("one")
	l.Append("")
	l.Append("three")
	x.SetData([]byte("d"))
	p, err := wire.Flatten(x, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p)
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 32, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		a := wire.NewArena()
		defer a.Reset()
		y := samepkg.NewA(a)
		if y.DecodeBytes(p) != nil {
			return
		}
		want, err := wire.Flatten(y, nil)
		var sga wire.SGA
		err2 := wire.SerializeSGA(y, &sga)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Flatten error %v, SerializeSGA error %v", err, err2)
		}
		if err == nil && !bytes.Equal(sgaBytes(&sga), want) {
			t.Fatalf("direct bytes differ from Flatten:\n got %x\nwant %x", sgaBytes(&sga), want)
		}
	})
}
