//go:build !cfcheck

package workload

// checked is false outside the checked build (-tags cfcheck).
const checked = false
