package wireimpl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
)

// unfusedRecorder is an SGAUnfused that records its call.
type unfusedRecorder struct{ called int }

func (u *unfusedRecorder) WireSerializeSGAUnfused(*SGA) error {
	u.called++
	return errUnfusedCalled
}

var errUnfusedCalled = errors.New("unfused path")

// TestSerializeOnlyCompat holds SerializeOnly (the entry of an older
// generator's code) to SerializeOnlyOr: the same head for lists of one
// short, one long and several values, and false (nothing applied) where
// SerializeOnlyOr takes the unfused path: a list that fails to load, and
// a message whose Core fails DirectOK.
func TestSerializeOnlyCompat(t *testing.T) {
	a := NewArena()
	var c Core
	c.Init(a)
	for _, vals := range [][]string{{"x"}, {"a value longer than thirty-two bytes"}, {"", "ab", "abcdefghij", "0123456789abcdefghij0123"}} {
		var l BytesList
		l.Init(a, len(vals))
		for _, v := range vals {
			l.Append([]byte(v))
		}
		var s1, s2 SGA
		ok, err := l.SerializeOnly(a, 1, &s1)
		if !ok || err != nil {
			t.Fatalf("%q: SerializeOnly = %v, %v", vals, ok, err)
		}
		var u unfusedRecorder
		if err := l.SerializeOnlyOr(&c, 1, &s2, &u); err != nil || u.called != 0 {
			t.Fatalf("%q: SerializeOnlyOr = %v (unfused called %d times)", vals, err, u.called)
		}
		if !bytes.Equal(s1.Head, s2.Head) || len(s1.Entries) != 0 || len(s2.Entries) != 0 {
			t.Fatalf("%q: heads differ:\n%x\n%x", vals, s1.Head, s2.Head)
		}
	}

	// A pending list with an element out of range: Load fails.
	data := make([]byte, 64)
	binary.LittleEndian.PutUint64(data[0:], uint64(16)<<32|1)
	binary.LittleEndian.PutUint64(data[16:], uint64(60)<<32|9) // past the end
	s := a.newSourceOf(data, mem.Buf{})
	var bad BytesList
	if _, err := s.BytesListEnt(0, 1, 8, len(data), 0, &bad); err != nil {
		t.Fatal(err)
	}
	var sga SGA
	if ok, err := bad.SerializeOnly(a, 1, &sga); ok || err != nil {
		t.Fatalf("SerializeOnly of a list that fails to load = %v, %v; want false, nil", ok, err)
	}
	var u unfusedRecorder
	if err := bad.SerializeOnlyOr(&c, 1, &sga, &u); err != errUnfusedCalled || u.called != 1 {
		t.Fatalf("SerializeOnlyOr of a list that fails to load = %v (unfused called %d times)", err, u.called)
	}

	// A Core whose arena was Reset since (DirectOK fails): the unfused path.
	var l BytesList
	l.Init(a, 1)
	l.Append([]byte("v"))
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	u = unfusedRecorder{}
	if err := l.SerializeOnlyOr(&c, 1, &sga, &u); err != errUnfusedCalled || u.called != 1 {
		t.Fatalf("SerializeOnlyOr of a stale message = %v (unfused called %d times)", err, u.called)
	}
}
