//go:build cfcheck

package workload

// checked is true in the checked build (-tags cfcheck): the model index a
// request carries (Request.mix) is verified against its key on every check.
const checked = true
