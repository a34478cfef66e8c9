package shm

import (
	"errors"
	"time"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/errs"
	"github.com/cornflakes-go/cornflakes/mem"
)

// ErrBusy is returned by a send when the peer holds every TX slot of the
// connection (it is not draining, or not releasing what it received) or
// more zero-copy bytes than Options.MaxZeroCopyBytes that cannot be copied
// instead. Nothing was sent; the caller may retry after Flush. It is
// backpressure, not loss: its Backpressure method reports true (the RPC
// layer queues the packet instead of counting it lost).
var ErrBusy error = busyError{}

type busyError struct{}

func (busyError) Error() string { return "shm: peer busy (no free TX slot)" }

// Backpressure reports that nothing was sent and the same send may succeed
// later.
func (busyError) Backpressure() bool { return true }

// ErrNoPeer is returned by a send to an address where no shm endpoint
// listens (no rendezvous socket), or whose connection failed.
var ErrNoPeer = errors.New("shm: no endpoint at address")

// ErrConfig reports an invalid datapath.Config or Options; it matches
// cornflakes.ErrConfig too.
var ErrConfig = errs.New("shm: invalid config", cornflakes.ErrConfig)

// Options are shm's kind-specific options, passed in
// datapath.Config.Options as Options or *Options.
type Options struct {
	// Dir, when set, puts the rendezvous sockets in this directory (path
	// "<Dir>/<ip:port>.sock"); otherwise they are abstract Unix socket
	// names "@cornflakes-shm/<Namespace>/<ip:port>" (per network
	// namespace, nothing on disk).
	Dir string
	// Namespace separates sets of endpoints that use the same addresses
	// in the abstract namespace (default "default").
	Namespace string
	// AllowUIDs lists the user ids whose processes may connect, checked
	// with SO_PEERCRED on both sides before anything is shared (default:
	// only this process's uid).
	AllowUIDs []uint32
	// Spaces are the shared spaces (mem.SpaceConfig.Shared) registered for
	// sending: zero-copy entries in them are sent as descriptors, and
	// every peer maps all of them read-only. Config.Pool's space is added
	// when it is shared. Entries elsewhere are copied.
	Spaces []*mem.Space
	// Slots is the number of TX slots (packets in flight) per peer
	// (default DefaultSlots, at most MaxSlots).
	Slots int
	// MaxZeroCopyBytes bounds the zero-copy bytes one peer may hold
	// (sent and not yet released); entries beyond it are copied
	// (default DefaultMaxZeroCopyBytes).
	MaxZeroCopyBytes int64
	// HandshakeTimeout bounds a connection's handshake (default
	// DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// CloseLinger bounds how long Close waits for peers to release what
	// they received (default DefaultCloseLinger).
	CloseLinger time.Duration
	// SpinWait makes a blocking Wait poll the rings for up to this long
	// before it sleeps (0: sleep at once), trading CPU for the latency of
	// a reply that is about to arrive.
	SpinWait time.Duration
	// TouchSegments makes RecvSegments, once it has parsed a batch of two
	// or more packets, read one byte of the first, middle and last cache
	// line of each of their segments but the first (the head, copied into
	// this endpoint's memory) before it returns them. A segment received
	// in place lies in the sender's memory, which this process has not
	// touched: the application's first read of it is a cache (and often a
	// TLB) miss, and when it reads the packets one after another those
	// misses come one at a time. Read together here, they overlap. For a
	// receiver that reads (part of) every value it receives, such as a
	// load generator checking responses; otherwise it costs ~20
	// instructions per segment and the misses of bytes nobody reads.
	TouchSegments bool
}

// Stats are shm's detailed counters (Endpoint.ShmStats).
type Stats struct {
	datapath.Stats
	// RxCopiedBytes are payload bytes Recv gathered into RX buffers;
	// RxZeroCopyBytes are bytes RecvSegments handed over in place
	// (aliasing the sender's memory); RxHeadBytes are the heads it
	// copied.
	RxCopiedBytes, RxZeroCopyBytes, RxHeadBytes uint64
	// BadDescriptors counts received descriptors dropped by validation
	// (slot or segment count out of range, unknown space, range outside
	// its space, a slot already held, a packet over MaxPayload).
	BadDescriptors uint64
	// BadCompletions counts completions naming a slot not in flight.
	BadCompletions uint64
	// Violations counts connections closed for a protocol violation (a
	// ring index that jumped, an unexpected message).
	Violations uint64
	// Busy counts sends refused with ErrBusy; ZeroCopyFallbacks counts
	// entries copied because the peer held MaxZeroCopyBytes.
	Busy, ZeroCopyFallbacks uint64
	// Refused counts peers refused (SO_PEERCRED or a bad handshake), and
	// PeersLost connections that ended (hang-up, crash, violation).
	Refused, PeersLost uint64
	// CompletionDrops counts completions not posted because the peer's
	// completion ring was full (a peer that stopped draining it).
	CompletionDrops uint64
	// Peers is the number of live connections.
	Peers int
	// TxInFlight is the number of our TX slots posted and not yet
	// completed by their peers, TxZeroCopyHeld the zero-copy bytes those
	// slots reference, and RxHeld the number of peers' slots this
	// endpoint holds for segmented packets the application has not
	// released (all three summed over the live connections, at the time
	// of the call).
	TxInFlight     int
	TxZeroCopyHeld int64
	RxHeld         int
}
