//go:build cfcheck

package wireimpl

// lend records the borrowed value p (see borrow.go).
func (a *Arena) lend(p []byte) { a.lendChecked(p) }

// lentModified reports whether a borrowed value of a's batch changed since
// it was set.
func (a *Arena) lentModified() bool { return len(a.lent) != 0 && a.checkLent() != nil }
