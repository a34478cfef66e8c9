package respbench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// processCPU is the user and system CPU time the process pid has used
// (/proc/<pid>/stat, in clock ticks of 10 ms).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("respbench: CPU time of process %d: %w", pid, err)
	}
	return parseStatCPU(b)
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux everywhere).
const clockTick = 10 * time.Millisecond

// maxTicks bounds each time of a stat line (about 348 years of CPU), so
// that their sum in clock ticks fits a time.Duration.
const maxTicks = 1 << 40

// parseStatCPU returns utime+stime of a /proc/<pid>/stat line: fields 14
// and 15, counted after the command name, which is in parentheses and may
// hold spaces.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("respbench: /proc stat line without a command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, errors.New("respbench: short /proc stat line")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 63)
	st, err2 := strconv.ParseUint(f[12], 10, 63)
	if err1 != nil || err2 != nil || ut > maxTicks || st > maxTicks {
		return 0, fmt.Errorf("respbench: /proc stat times %q %q", f[11], f[12])
	}
	return time.Duration(ut+st) * clockTick, nil
}

// processRuntime is the time every live thread of process pid has spent on
// a CPU, summed from /proc/<pid>/task/*/schedstat (nanoseconds, the
// scheduler's own accounting), or, where schedstat is missing, the 10 ms
// ticks of processCPU. Threads that exited are not counted: neither
// server ends threads while it serves.
func processRuntime(pid int) (time.Duration, error) {
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/schedstat"); errors.Is(err, os.ErrNotExist) {
		return processCPU(pid) // a kernel without schedstat (or no such process: its error)
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("respbench: threads of %d: %w", pid, err)
	}
	var sum time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited between ReadDir and ReadFile
		}
		d, err := parseSchedstat(b)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// parseSchedstat returns the first field of a /proc/.../schedstat line:
// nanoseconds on a CPU.
func parseSchedstat(b []byte) (time.Duration, error) {
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0, errors.New("respbench: empty schedstat line")
	}
	ns, err := strconv.ParseUint(f[0], 10, 63)
	if err != nil {
		return 0, fmt.Errorf("respbench: schedstat run time %q", f[0])
	}
	return time.Duration(ns), nil
}
