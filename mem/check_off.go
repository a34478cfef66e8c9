//go:build !cfcheck

package mem

// checked is false in the normal build; the checks of the checked build
// (-tags cfcheck) compile away.
const checked = false
