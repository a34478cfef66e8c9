// Package calibrate measures, on the machine and datapath at hand, when
// scatter-gather (zero-copy) beats copying for the fields of a response:
// the measurement study of Cornflakes (SOSP'23) §5, whose result is the
// per-field copy threshold (512 bytes on the paper's hardware).
//
// A server holds a working set of values, several times the last-level
// cache, each value its own item of registered memory (so reference counts
// are spread over a large out-of-line array, as in a real store). Each
// request names a key; the server answers with a list of Entries values
// chosen pseudo-randomly from the key (non-contiguous, like the paper's
// linked lists) totalling TotalBytes, built as a generated Cornflakes
// ListBuffers and sent with SendObject through the real datapath, once with
// the arena threshold at CopyAll (every value gathered into the TX buffer)
// and once at 0 (every value one scatter-gather entry, with the
// Recover/refcount costs that memory safety and transparency add).
//
// The two modes are interleaved in short phases so that load from other
// processes affects both alike. The primary metric is the server thread's
// CPU time per response (CLOCK_THREAD_CPUTIME_ID around request handling,
// Flush and arena reset): a single-core server's highest throughput is its
// inverse, so gain = cost(copy)/cost(sg) - 1 is the paper's "throughput
// difference divided by copy". The clients' wall-clock throughput per mode
// is reported alongside.
package calibrate

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
)

// Errors returned (wrapped) by this package.
var (
	ErrConfig = errs.New("calibrate: invalid config", cornflakes.ErrConfig)
)

// Defaults.
var (
	DefaultEntries    = []int{1, 2, 4, 8, 16, 32}
	DefaultTotalSizes = []int{64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	QuickTotalSizes   = []int{64, 256, 1024, 4096, 16384}
)

const (
	// DefaultLLC is assumed when the last-level cache size cannot be read.
	DefaultLLC = 32 << 20
	// WorkingSetFactor is the working set in multiples of the LLC.
	WorkingSetFactor = 4
	// MaxWorkingSet bounds Config.WorkingSet.
	MaxWorkingSet = 1 << 30
	// MaxEntries bounds the number of entries per response.
	MaxEntries = 60
	// MaxTotal bounds the response size (one datagram).
	MaxTotal = 60000
	// MaxRounds bounds Config.Rounds (the round travels in one byte).
	MaxRounds = 250
)

// Config configures Run. Zero values take the defaults.
type Config struct {
	// Datapath is "udp" (default), "shm" (shared memory: the working set
	// in a shared space the server sends from), "memnet" or "xdp" (AF_XDP in network
	// namespaces of an xdp.Topology; needs root).
	Datapath   string
	Entries    []int // default DefaultEntries
	TotalSizes []int // default DefaultTotalSizes (QuickTotalSizes with Quick)
	Quick      bool
	// WorkingSet in bytes (default WorkingSetFactor × the LLC size, at most
	// MaxWorkingSet/2).
	WorkingSet int
	// Rounds of (copy phase, scatter-gather phase) per cell after one
	// warmup round, and the phase length; defaults depend on Quick. Cells
	// report the median over rounds.
	Rounds int
	Phase  time.Duration
	// Clients is the number of outstanding requests (default 16).
	Clients int
	// Verify decodes every response on the client and compares its values
	// byte for byte with the ones the server must send (costs client CPU,
	// not the server's measured time); without it sizes are checked.
	Verify bool
	// Progress, if set, receives one line per cell.
	Progress io.Writer
}

// Cell is the measurement of one (entries, total size) point.
type Cell struct {
	Entries    int `json:"entries"`
	TotalBytes int `json:"total_bytes"`
	EntryBytes int `json:"entry_bytes"`
	// Server CPU nanoseconds per response in each mode.
	CopyNsPerResp float64 `json:"copy_ns_per_resp"`
	SGNsPerResp   float64 `json:"sg_ns_per_resp"`
	// Client-observed responses per second in each mode.
	CopyRPS float64 `json:"copy_rps"`
	SGRPS   float64 `json:"sg_rps"`
	// GainPct is 100 × (cost(copy)/cost(sg) − 1): positive when
	// scatter-gather is faster.
	GainPct float64 `json:"sg_gain_pct"`
	// Responses measured per mode.
	CopyResponses uint64 `json:"copy_responses"`
	SGResponses   uint64 `json:"sg_responses"`
	// ZeroCopyEntries is the scatter-gather entries the server's endpoint
	// sent without a copy during the cell (0 in copy mode; in
	// scatter-gather mode up to MaxSegments-1 per response, the rest are
	// copied): 0 in a whole cell means the values were not in memory the
	// datapath can send from.
	ZeroCopyEntries uint64 `json:"zero_copy_entries"`
}

// Result is the whole sweep.
type Result struct {
	Datapath        string `json:"datapath"`
	LLCBytes        int    `json:"llc_bytes"`
	LLCSource       string `json:"llc_source"`
	WorkingSetBytes int    `json:"working_set_bytes"`
	// WorkingSetNote says where the working set lives when that matters
	// (xdp: inside the UMEM, whose size is reported).
	WorkingSetNote string `json:"working_set_note,omitempty"`
	Entries        []int  `json:"entries"`
	TotalSizes     []int  `json:"total_sizes"`
	Cells          []Cell `json:"cells"`
	// RecommendedThreshold is the smallest per-entry size from which
	// scatter-gather wins in every measured cell; -1 when it never does
	// consistently (copy everything).
	RecommendedThreshold int    `json:"recommended_threshold"`
	Date                 string `json:"date"`
}

func (c *Config) fill() error {
	if c.Datapath == "" {
		c.Datapath = "udp"
	}
	if len(c.Entries) == 0 {
		c.Entries = DefaultEntries
	}
	if len(c.TotalSizes) == 0 {
		c.TotalSizes = DefaultTotalSizes
		if c.Quick {
			c.TotalSizes = QuickTotalSizes
		}
	}
	if c.Rounds == 0 {
		c.Rounds = 10
		if c.Quick {
			c.Rounds = 7
		}
	}
	if c.Phase == 0 {
		c.Phase = 100 * time.Millisecond
		if c.Quick {
			c.Phase = 40 * time.Millisecond
		}
	}
	if c.Clients == 0 {
		c.Clients = 16
	}
	if !slices.Contains([]string{"udp", "shm", "memnet", "xdp"}, c.Datapath) {
		return fmt.Errorf("%w: datapath %q (want udp, shm, memnet or xdp)", ErrConfig, c.Datapath)
	}
	for _, e := range c.Entries {
		if e < 1 || e > MaxEntries {
			return fmt.Errorf("%w: entries %d not in [1,%d]", ErrConfig, e, MaxEntries)
		}
	}
	for _, t := range c.TotalSizes {
		if t < 1 || t > MaxTotal {
			return fmt.Errorf("%w: total size %d not in [1,%d]", ErrConfig, t, MaxTotal)
		}
	}
	switch {
	case c.WorkingSet < 0 || c.WorkingSet > MaxWorkingSet:
		return fmt.Errorf("%w: working set %d not in [0,%d]", ErrConfig, c.WorkingSet, MaxWorkingSet)
	case c.Rounds < 1 || c.Rounds > MaxRounds || c.Phase < time.Millisecond || c.Phase > time.Minute:
		return fmt.Errorf("%w: rounds %d, phase %v", ErrConfig, c.Rounds, c.Phase)
	case c.Clients < 1 || c.Clients > 1024:
		return fmt.Errorf("%w: clients %d not in [1,1024]", ErrConfig, c.Clients)
	}
	c.Entries = slices.Clone(c.Entries)
	c.TotalSizes = slices.Clone(c.TotalSizes)
	slices.Sort(c.Entries)
	slices.Sort(c.TotalSizes)
	return nil
}

// LLC returns the size of the last-level cache and where it was read:
// sysfs (the highest-level data or unified cache of cpu0), else the
// "cache size" of /proc/cpuinfo when it is at least 4 MiB (smaller values
// there are per-core L2 on AMD), else DefaultLLC.
func LLC() (int, string) {
	return llcFrom("/sys/devices/system/cpu/cpu0/cache", "/proc/cpuinfo")
}

func llcFrom(sysDir, cpuinfo string) (int, string) {
	best, bestLevel := 0, 0
	dirs, _ := filepath.Glob(filepath.Join(sysDir, "index*"))
	for _, d := range dirs {
		read := func(f string) string {
			b, _ := os.ReadFile(filepath.Join(d, f))
			return strings.TrimSpace(string(b))
		}
		if t := read("type"); t != "Unified" && t != "Data" {
			continue
		}
		lvl, err := strconv.Atoi(read("level"))
		if err != nil {
			continue
		}
		size, ok := parseSize(read("size"))
		if ok && lvl >= bestLevel {
			best, bestLevel = size, lvl
		}
	}
	if best > 0 {
		return best, fmt.Sprintf("sysfs L%d", bestLevel)
	}
	if f, err := os.Open(cpuinfo); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "cache size" {
				if size, ok := parseSize(strings.TrimSpace(v)); ok && size >= 4<<20 {
					return size, "/proc/cpuinfo"
				}
				break
			}
		}
	}
	return DefaultLLC, "default (cache size not exposed)"
}

// parseSize parses "32768K", "1024 KB", "32M", "512".
func parseSize(s string) (int, bool) {
	s = strings.TrimSpace(strings.ToUpper(s))
	s = strings.TrimSuffix(s, "B")
	s = strings.TrimSpace(s)
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 || n > 1<<40/mul {
		return 0, false
	}
	return n * mul, true
}

// Recommend returns the smallest per-entry size S among the cells such
// that scatter-gather wins (GainPct > 0) in every cell whose entry size is
// at least S; -1 when the largest entries do not win.
func Recommend(cells []Cell) int {
	sizes := []int{}
	for _, c := range cells {
		if !slices.Contains(sizes, c.EntryBytes) {
			sizes = append(sizes, c.EntryBytes)
		}
	}
	slices.Sort(sizes)
	rec := -1
	for i := len(sizes) - 1; i >= 0; i-- {
		ok := true
		for _, c := range cells {
			if c.EntryBytes == sizes[i] && !(c.GainPct > 0) {
				ok = false
			}
		}
		if !ok {
			break
		}
		rec = sizes[i]
	}
	return rec
}
