package microbench

import (
	"unsafe"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// cfKept is the hybrid mode's build side (see Cornflakes): one message of the case's kind,
// built once at Prepare in an arena of its own that is Reset only by Close, whose leaves
// Serialize and Echo set again each op with the borrowed setters (docs/CODEGEN.md, "Reusing
// a built message"), as the vtprotobuf harness keeps its build-side structs and sets their
// fields.
type cfKept struct {
	a      *wire.Arena
	msg    wire.Object        // *cf.SingleBuffer, *cf.ListBuffers or *cf.Tree5
	list   *wire.BytesList    // KindList: msg's list, reserved for the longest variant
	lmsg   *cf.ListBuffers    // KindList: msg, typed (Echo serializes it without a type switch)
	single *cf.SingleBuffer   // KindSingle: msg
	leaves []*cf.SingleBuffer // KindSingle: msg; KindTree: the 32 leaves, depth-first
}

// newCFKept builds the kept message of kind k in a new arena of threshold thr; maxVals is the
// largest value count of the shape's variants (the list's reserved room).
func newCFKept(k Kind, thr, maxVals int) *cfKept {
	a := wire.NewArena()
	a.Threshold = thr
	kp := &cfKept{a: a}
	switch k {
	case KindSingle:
		m := cf.NewSingleBuffer(a)
		kp.msg, kp.single, kp.leaves = m, m, []*cf.SingleBuffer{m}
	case KindList:
		m := cf.NewListBuffers(a)
		kp.msg, kp.lmsg, kp.list = m, m, m.InitMessages(maxVals)
	default:
		m := cf.NewTree5(a)
		kp.msg = m
		kp.leaves = make([]*cf.SingleBuffer, 0, TreeLeaves)
		for _, t4 := range [2]*cf.Tree4{m.InitLeft(), m.InitRight()} {
			for _, t3 := range [2]*cf.Tree3{t4.InitLeft(), t4.InitRight()} {
				for _, t2 := range [2]*cf.Tree2{t3.InitLeft(), t3.InitRight()} {
					for _, t1 := range [2]*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
						kp.leaves = append(kp.leaves, t1.InitLeft(), t1.InitRight())
					}
				}
			}
		}
	}
	return kp
}

// setBufs sets the kept message's values to vals, whose references are bufs (the case's
// registered values): below the threshold by their bytes (SetMessageBorrowed,
// AppendBorrowed: copied once, into the head, at serialize), at or above it by their
// reference (SetMessageBufBorrowed, AppendBufBorrowed: zero-copy on the case's reference).
// small reports that every value is below the threshold: a list then takes them all in one
// SetBorrowedAll, as a caller holding its values in a slice sets them.
// Nothing is allocated and no reference is taken: the case keeps its values, unchanged,
// until Close, after the kept arena's Reset.
func (kp *cfKept) setBufs(vals [][]byte, bufs []mem.Buf, small bool) {
	thr := kp.a.Threshold
	if l := kp.list; l != nil {
		if small {
			l.SetBorrowedAll(vals) // Truncate(0) and AppendBorrowedAll
			return
		}
		l.Truncate(0) // keeps the list's storage
		for i, p := range vals {
			if len(p) < thr {
				l.AppendBorrowed(p)
			} else {
				l.AppendBufBorrowed(bufs[i])
			}
		}
		return
	}
	for i, m := range kp.leaves {
		if p := vals[i]; len(p) < thr {
			m.SetMessageBorrowed(p)
		} else {
			m.SetMessageBufBorrowed(bufs[i])
		}
	}
}

// setValues sets the kept message's values to vals, slices of whole, the bytes of in (Echo's
// decoded values; the case holds in, unchanged, until Close): below the threshold by their
// bytes (SetMessageBorrowed: aliased, copied once, into the head, at serialize), at or above
// it by their window of in's reference (SetMessageBufBorrowed: zero-copy on the case's
// reference, as the per-op build aliased the decoded input without a reference count).
// Nothing is allocated and no reference is taken. It sets a SingleBuffer or a Tree5; a list
// is set by Echo from the decoded list, in one SetBorrowedFrom with the same rule (an echo
// server responds with the request's list).
func (kp *cfKept) setValues(vals [][]byte, in mem.Buf, whole []byte) {
	thr := kp.a.Threshold
	if m := kp.single; m != nil {
		p := vals[0]
		if off, ok := offsetIn(whole, p); len(p) >= thr && ok {
			m.SetMessageBufBorrowed(in.SliceTrusted(off, len(p)))
		} else {
			m.SetMessageBorrowed(p)
		}
		return
	}
	for i, m := range kp.leaves {
		p := vals[i]
		if off, ok := offsetIn(whole, p); len(p) >= thr && ok {
			m.SetMessageBufBorrowed(in.SliceTrusted(off, len(p)))
		} else {
			m.SetMessageBorrowed(p)
		}
	}
}

// allBelow reports whether every value of vals is shorter than thr.
func allBelow(vals [][]byte, thr int) bool {
	for _, p := range vals {
		if len(p) >= thr {
			return false
		}
	}
	return true
}

// offsetIn returns the offset of p in whole, or false when p is empty or does not lie within
// whole.
func offsetIn(whole, p []byte) (int, bool) {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(p))) - uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	if len(p) == 0 || off > uintptr(len(whole)) || uintptr(len(p)) > uintptr(len(whole))-off {
		return 0, false
	}
	return int(off), true
}
