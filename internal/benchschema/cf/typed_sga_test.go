package cf_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// typedSGA is a message with the generated typed SerializeSGA.
type typedSGA interface {
	wire.Object
	SerializeSGA(*wire.SGA) error
}

// sameSGA fails unless got and want hold the same head and entries.
func sameSGA(t *testing.T, what string, got, want *wire.SGA) {
	t.Helper()
	if !bytes.Equal(got.Head, want.Head) || len(got.Entries) != len(want.Entries) {
		t.Fatalf("%s: head %x (%d entries), want %x (%d)", what, got.Head, len(got.Entries), want.Head, len(want.Entries))
	}
	for i := range want.Entries {
		if got.Entries[i] != want.Entries[i] {
			t.Fatalf("%s: entry %d differs", what, i)
		}
	}
}

// TestTypedSerializeSGA holds the typed SerializeSGA to wire.SerializeSGA
// and to the unfused path, for a flat message, a list built, truncated
// and grown again (the list's kept totals against the unfused Sizer's
// walk) and a tree, and to its error after the arena's Reset.
func TestTypedSerializeSGA(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 700))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)

	s := cf.NewSingleBuffer(a)
	s.SetMessageBuf(zc)
	l := cf.NewListBuffers(a)
	ml := l.InitMessages(2)
	ml.Append([]byte("copied"))
	ml.AppendBuf(zc)
	ml.Append(bytes.Repeat([]byte{7}, 300)) // beyond the reserved room
	ml.AppendBuf(zc)
	ml.AppendString("a string")
	ml.Truncate(3)
	ml.AppendBuf(zc)
	tr := cf.NewTree5(a)
	tr.InitLeft().InitRight().InitLeft().InitLeft().InitRight().SetMessageBuf(zc)
	tr.InitRight().InitLeft().InitLeft().InitRight().InitLeft().SetMessage([]byte("leaf"))
	for _, m := range []typedSGA{s, l, tr} {
		want := unfused(t, m)
		var got, viaWire wire.SGA
		if err := m.SerializeSGA(&got); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if err := wire.SerializeSGA(m, &viaWire); err != nil {
			t.Fatalf("%T: wire.SerializeSGA: %v", m, err)
		}
		sameSGA(t, "typed", &got, want)
		sameSGA(t, "wire.SerializeSGA", &viaWire, want)
	}
	resetArena(t, a)
	for _, m := range []typedSGA{s, l, tr} {
		var sga wire.SGA
		if err := m.SerializeSGA(&sga); !errors.Is(err, wire.ErrArenaReset) {
			t.Fatalf("%T after Reset: %v, want ErrArenaReset", m, err)
		}
	}
}
