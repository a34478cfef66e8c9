//go:build cfcheck

package wire

// checked is true in the checked build (-tags cfcheck): a Reset arena
// never hands the memory of its messages out again, so that a message used
// after its arena's Reset is always detected (ErrArenaReset).
const checked = true
