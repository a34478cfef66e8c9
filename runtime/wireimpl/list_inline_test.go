package wireimpl

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"
)

// inlMsg is the layout the generator emits for a one-level message with a
// bytes list: the zeroed fields, then the list's inline elements.
type inlMsg struct {
	inlMsgZeroed
	inl [InlineItems]Bytes
}

type inlMsgZeroed struct {
	cf Core
	l  BytesList
}

var inlMsgType = NewType[inlMsg]()

// newInlMsg is the generated New of such a message.
func newInlMsg(a *Arena) *inlMsg {
	x := inlMsgType.TryNewRaw(a)
	if x == nil {
		x = inlMsgType.NewSlow(a)
	} else {
		x.inlMsgZeroed = inlMsgZeroed{}
	}
	x.cf.Init(a)
	return x
}

// inInline reports whether l's elements lie in inl.
func inInline(l *BytesList, inl *[InlineItems]Bytes) bool {
	return cap(l.items) > 0 && unsafe.SliceData(l.items) == &inl[0]
}

// TestBytesListInitIn checks the inline elements of a list of a one-level
// message: a list of at most InlineItems elements lies in the message and
// takes no slab memory, one built longer or grown beyond them moves to the
// slab with its elements, and a message of a later batch, from
// TryNewRaw's reused memory, starts empty whatever the inline elements of
// its predecessor held.
func TestBytesListInitIn(t *testing.T) {
	a := NewArena()
	defer a.Reset()
	vals := [][]byte{[]byte("one"), bytes.Repeat([]byte{2}, 40), []byte("three"), {}, []byte("five")}
	for batch := range 3 {
		for _, n := range []int{0, 1, 2, 3} {
			x := newInlMsg(a)
			if x.l.Len() != 0 || x.cf.Arena() != a {
				t.Fatalf("batch %d: a new message holds %d elements", batch, x.l.Len())
			}
			x.l.InitIn(a, n, &x.inl)
			if got := inInline(&x.l, &x.inl); got != (n <= InlineItems) {
				t.Fatalf("batch %d, InitIn(%d): inline %v", batch, n, got)
			}
			for i, v := range vals {
				x.l.Append(v)
				if i+1 <= InlineItems && n <= InlineItems && !inInline(&x.l, &x.inl) {
					t.Fatalf("batch %d, InitIn(%d): element %d not inline", batch, n, i)
				}
				if i+1 > InlineItems && inInline(&x.l, &x.inl) {
					t.Fatalf("batch %d, InitIn(%d): %d elements inline", batch, n, i+1)
				}
				for j := range i + 1 {
					if !bytes.Equal(x.l.At(j), vals[j]) {
						t.Fatalf("batch %d, InitIn(%d), %d appended: element %d = %q, want %q", batch, n, i+1, j, x.l.At(j), vals[j])
					}
				}
			}
			checkTotals(t, fmt.Sprintf("batch %d, InitIn(%d)", batch, n), &x.l, true)
			x.l.Truncate(1)
			x.l.InitIn(a, 0, &x.inl) // ClearX
			if x.l.Len() != 0 || !inInline(&x.l, &x.inl) {
				t.Fatalf("batch %d: cleared list holds %d elements (inline %v)", batch, x.l.Len(), inInline(&x.l, &x.inl))
			}
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}

	// A built list of at most InlineItems elements takes no slab memory:
	// once the first batches sized the message slab, a batch of such
	// messages grows nothing.
	for i := range 4 {
		g := a.Grown()
		for range 100 {
			x := newInlMsg(a)
			x.l.InitIn(a, 2, &x.inl)
			x.l.Append(vals[0])
			x.l.Append(vals[2])
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if i >= 2 && a.Grown() != g {
			t.Fatalf("a batch of inline lists grew the arena by %d bytes", a.Grown()-g)
		}
	}
}
