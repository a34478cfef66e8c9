//go:build cfcheck

package wireimpl

import (
	"hash/maphash"

	"github.com/cornflakes-go/cornflakes/mem"
)

// lend records the borrowed value p, when it is not empty, with its
// checksum (see borrow.go).
func (a *Arena) lend(p []byte) {
	if len(p) != 0 {
		a.lent = append(a.lent, lentValue{p: p, sum: maphash.Bytes(lentSeed, p)})
	}
}

// lendBuf records the borrowed window p of the borrowed reference buf.
func (a *Arena) lendBuf(p []byte, buf mem.Buf) {
	if len(p) != 0 {
		a.lent = append(a.lent, lentValue{p: p, sum: maphash.Bytes(lentSeed, p), buf: buf})
	}
}

// lentModified reports whether a borrowed value of a's batch changed since
// it was set.
func (a *Arena) lentModified() bool { return len(a.lent) != 0 && a.checkLent() != nil }
