//go:build !cfcheck

package wireimpl

import "github.com/cornflakes-go/cornflakes/mem"

// lend does nothing outside the checked build (see borrow.go).
func (a *Arena) lend(*Bytes, []byte) {}

// lendBuf does nothing outside the checked build (see borrow.go).
func (a *Arena) lendBuf(*Bytes, []byte, mem.Buf) {}

// unlend does nothing outside the checked build (see borrow.go).
func (a *Arena) unlend(*Bytes) {}

// lentModified is false outside the checked build (see borrow.go).
func (a *Arena) lentModified() bool { return false }
