//go:build linux

package respbench

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinServers pins every thread of the server processes (pids) to CPU 0
// and returns a function that gives this process its CPUs back (the
// redis-server is stopped, not unpinned) and the taskset CPU list of the
// clients (the other CPUs).
func pinServers(pids map[string]int) (restore func(), clientCPUs string, err error) {
	if runtime.NumCPU() < 2 {
		return nil, "", errors.New("respbench: --pin needs at least two CPUs")
	}
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return nil, "", fmt.Errorf("respbench: sched_getaffinity: %w", err)
	}
	self := os.Getpid()
	restore = func() { _ = setAffinity(self, &orig) }
	var one unix.CPUSet
	one.Set(0)
	for _, pid := range pids {
		if err := setAffinity(pid, &one); err != nil {
			restore()
			return nil, "", err
		}
	}
	return restore, "1-" + strconv.Itoa(runtime.NumCPU()-1), nil
}

// setAffinity sets the CPU mask of every thread of process pid (threads
// made later inherit it from the thread that makes them).
func setAffinity(pid int, set *unix.CPUSet) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("respbench: threads of %d: %w", pid, err)
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("respbench: sched_setaffinity %d: %w", tid, err)
		}
	}
	return nil
}
