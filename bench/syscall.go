package bench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// SyscallCost is what MeasureSyscall saw: the time one trivial system call
// takes on this machine, and why it may be slow. Kernel UDP pays at least
// one such entry per batch of packets on each side, so this is the unit
// that kernel-datapath results scale with. It varies by orders of
// magnitude between machines: tens of ns on bare metal with PCID, over a
// microsecond in a VM whose kernel isolates page tables without PCID
// (every entry then flushes the TLB, and user code after it refills it).
type SyscallCost struct {
	Median time.Duration // median over the probe's batches
	// Why, when known: "page-table isolation without PCID" and the like
	// (from /sys/devices/system/cpu/vulnerabilities/meltdown and the CPU
	// flags); empty otherwise.
	Why string
}

// String summarises the cost on one line.
func (c SyscallCost) String() string {
	s := fmt.Sprintf("a system call costs %v", c.Median.Round(time.Nanosecond))
	if c.Why != "" {
		s += " (" + c.Why + ")"
	}
	return s
}

// MeasureSyscall times batches of 100 getppid system calls made without
// the Go scheduler's bookkeeping (RawSyscall) and returns the median cost
// of one call over batches batches (default 20; about 2000 calls, a few
// milliseconds even where a call costs a microsecond).
func MeasureSyscall(batches int) SyscallCost {
	if batches <= 0 {
		batches = 20
	}
	per := make([]time.Duration, batches)
	for i := range per {
		t0 := time.Now()
		for range 100 {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
		per[i] = time.Since(t0) / 100
	}
	slices.Sort(per)
	meltdown, _ := os.ReadFile("/sys/devices/system/cpu/vulnerabilities/meltdown")
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	return SyscallCost{Median: per[len(per)/2], Why: syscallWhy(string(meltdown), string(cpuinfo))}
}

// syscallWhy explains an expensive kernel entry from the kernel's
// mitigation report and /proc/cpuinfo: page-table isolation (PTI) switches
// page tables on every entry and exit, which without PCID flushes the TLB.
func syscallWhy(meltdown, cpuinfo string) string {
	if !strings.Contains(meltdown, "PTI") {
		return ""
	}
	for line := range strings.SplitSeq(cpuinfo, "\n") {
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		if slices.Contains(strings.Fields(line), "pcid") {
			return "kernel page-table isolation, with PCID"
		}
		return "kernel page-table isolation without PCID: every system call flushes the TLB"
	}
	return "kernel page-table isolation"
}
