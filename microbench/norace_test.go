//go:build !race

package microbench

const raceEnabled = false
