package datapath

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Defaults shared by datapaths; a kind may override them.
const (
	// DefaultBatch is the number of packets Send queues before it flushes
	// on its own, and a good size for Recv's packet slice.
	DefaultBatch = 32
)

// Config holds the options common to every datapath kind. Zero values mean
// "the kind's default".
type Config struct {
	// Local is the address to bind (an invalid AddrPort lets the kind pick,
	// port 0 picks an ephemeral port).
	Local netip.AddrPort
	// Pool provides the endpoint's TX and RX buffers. It must be owned by
	// the endpoint's goroutine (or be Concurrent). Nil: the endpoint creates
	// its own pool and closes it in Close.
	Pool *mem.Pool
	// Batch is how many packets Send queues before flushing by itself.
	Batch int
	// MaxPayload caps the payload of one packet (0: kind default).
	MaxPayload int
	// MaxSegments caps the scatter-gather segments of one packet, head
	// included (0: kind default).
	MaxSegments int
	// BusyPoll asks for a busy-polling endpoint (Wait spins) rather than a
	// blocking one, where the kind distinguishes them.
	BusyPoll bool
	// Options carries kind-specific options (for example memnet.Options).
	Options any
}

// OpenFunc creates an endpoint of one kind.
type OpenFunc func(Config) (Endpoint, error)

// ErrUnknownKind is returned by Open for a kind nobody registered.
var ErrUnknownKind = errors.New("datapath: unknown kind")

var registry struct {
	sync.RWMutex
	kinds map[string]OpenFunc
}

// Register makes a datapath kind available to Open. It is meant to be called
// from an init function; it panics on an empty kind, a nil open function or a
// kind registered twice, which are programming errors.
func Register(kind string, open OpenFunc) {
	if kind == "" || open == nil {
		panic("datapath: Register with empty kind or nil open function")
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.kinds == nil {
		registry.kinds = make(map[string]OpenFunc)
	}
	if _, dup := registry.kinds[kind]; dup {
		panic("datapath: kind " + kind + " registered twice")
	}
	registry.kinds[kind] = open
}

// Open creates an endpoint of the named kind ("udp", "memnet", "xdp", ...).
// The kind's package must be linked in (imported, possibly for side effects).
// An unregistered kind gives an error wrapping ErrUnknownKind that lists the
// registered kinds. A failed open returns a nil Endpoint, whatever the
// kind's OpenFunc returned with its error.
func Open(kind string, cfg Config) (Endpoint, error) {
	registry.RLock()
	open := registry.kinds[kind]
	registry.RUnlock()
	if open == nil {
		hint := ""
		switch kind {
		case "udp", "memnet", "xdp", "shm":
			// Kinds register from their package's init: the usual cause
			// is a program that never imports the kind's package.
			hint = fmt.Sprintf("; import _ %q to register it", "github.com/cornflakes-go/cornflakes/datapath/"+kind)
		}
		return nil, fmt.Errorf("%w %q (registered: %v%s)", ErrUnknownKind, kind, Kinds(), hint)
	}
	ep, err := open(cfg)
	if err != nil {
		// A kind's OpenFunc may return its typed nil with the error: the
		// caller must get a nil interface, or its "ep != nil" cleanup
		// would call Close on a nil endpoint.
		return nil, err
	}
	return ep, nil
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	registry.RLock()
	defer registry.RUnlock()
	ks := make([]string, 0, len(registry.kinds))
	for k := range registry.kinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Add adds o's counters to s (for totals over several endpoints).
func (s *Stats) Add(o Stats) {
	s.TxPackets += o.TxPackets
	s.TxBytes += o.TxBytes
	s.RxPackets += o.RxPackets
	s.RxBytes += o.RxBytes
	s.ZeroCopyEntries += o.ZeroCopyEntries
	s.ZeroCopyBytes += o.ZeroCopyBytes
	s.CopiedEntries += o.CopiedEntries
	s.CopiedBytes += o.CopiedBytes
	s.Drops += o.Drops
	s.Errors += o.Errors
}
