//go:build cfcheck

package mem

// checked is true in the checked build (-tags cfcheck): released items are
// poisoned and stale handles are detected on every use.
const checked = true
