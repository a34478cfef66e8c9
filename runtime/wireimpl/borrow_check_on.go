//go:build cfcheck

package wireimpl

import (
	"hash/maphash"

	"github.com/cornflakes-go/cornflakes/mem"
)

// lend records the borrowed value p of the field b with its checksum
// (see borrow.go). The record replaces b's previous one, so that a field
// re-set any number of times before Reset keeps one record; an empty p
// only drops it.
func (a *Arena) lend(b *Bytes, p []byte) { a.lendBuf(b, p, mem.Buf{}) }

// lendBuf records the borrowed window p of the field b, and the borrowed
// reference buf, replacing b's previous record (see lend).
func (a *Arena) lendBuf(b *Bytes, p []byte, buf mem.Buf) {
	i, ok := a.lentAt[b]
	if len(p) == 0 {
		if ok {
			a.lent[i] = lentValue{} // an empty record: nothing to check
		}
		return
	}
	v := lentValue{p: p, sum: maphash.Bytes(lentSeed, p), buf: buf}
	if ok {
		a.lent[i] = v
		return
	}
	if a.lentAt == nil {
		a.lentAt = make(map[*Bytes]int)
	}
	a.lentAt[b] = len(a.lent)
	a.lent = append(a.lent, v)
}

// unlend drops the record of the field b (re-set with a value that is not
// borrowed).
func (a *Arena) unlend(b *Bytes) {
	if i, ok := a.lentAt[b]; ok {
		a.lent[i] = lentValue{}
	}
}

// lentModified reports whether a borrowed value of a's batch changed since
// it was set.
func (a *Arena) lentModified() bool { return len(a.lent) != 0 && a.checkLent() != nil }
