//go:build !cfcheck

package wireimpl

// lend does nothing outside the checked build (see borrow.go).
func (a *Arena) lend([]byte) {}

// lentModified is false outside the checked build (see borrow.go).
func (a *Arena) lentModified() bool { return false }
