//go:build !cfcheck

package wire

// checked is false outside the checked build: a Reset arena reuses its
// messages' memory, so a message used after Reset is detected only until
// its memory is handed out again.
const checked = false
