package proto

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
)

// Default protocol constants (eRPC's values).
const (
	DefaultCredits    = 32 // kSessionCredits: packets in flight per client session
	DefaultWindow     = 8  // kSessionReqWindow: slots (concurrent requests) per session
	DefaultRTO        = 5 * time.Millisecond
	DefaultMaxMsgSize = 8 << 20 // largest message, request or response
	DefaultMaxBacklog = 1 << 16 // requests queued per session beyond the window
	// SackWindow is how far beyond the next expected packet a receiver
	// accepts packets out of order when selective retransmission is on.
	SackWindow = 64
	// FastRetransmitThresh is the number of packets acknowledged beyond a
	// hole after which (with selective retransmission) the hole is resent
	// without waiting for the RTO.
	FastRetransmitThresh = 3
	// DefaultReasmBudget bounds the reassembly memory of all server
	// sessions of a core (Config.ReasmBudget).
	DefaultReasmBudget = 512 << 20
	// DefaultReasmTimeout is how long a partly received request may go
	// without a packet before its buffer is reclaimed.
	DefaultReasmTimeout = 5 * time.Second
)

// Config holds every protocol constant. The zero value of a field means its
// default.
type Config struct {
	// Credits is the number of packets a client session may have in flight.
	Credits int
	// Window is the number of slots per session (a power of two, ≤ 64).
	Window int
	// RTO is the retransmission timeout; the loss scan runs every RTO/10.
	RTO time.Duration
	// DataPerPkt is the number of message bytes one packet carries
	// (the datapath's MaxPayload minus HeaderSize). Required.
	DataPerPkt int
	// MaxMsgSize bounds request and response sizes. A message plus its
	// reply must fit the 14-bit packet number space:
	// 2*ceil(MaxMsgSize/DataPerPkt)-1 ≤ 16384.
	MaxMsgSize int
	// MaxBacklog bounds the requests queued per session when all slots are busy.
	MaxBacklog int
	// Selective turns on selective retransmission: receivers accept packets
	// out of order within SackWindow and senders resend only missing packets
	// (plus fast retransmission of a hole after FastRetransmitThresh later
	// acknowledgements). Off = eRPC's go-back-N.
	Selective bool
	// CC configures congestion control (Timely + rate limiter).
	CC CCConfig

	// ReasmBudget bounds the bytes of reassembly buffers that all server
	// sessions together hold for requests still being received (default
	// DefaultReasmBudget; negative: no limit). ReasmSessionBudget bounds
	// them per session (default Window*MaxMsgSize, what a client may
	// legitimately have in flight; negative: no limit). A
	// request's buffer starts at ReasmInitial bytes (default 8 packets)
	// and doubles as packets beyond it arrive, so what a peer holds
	// follows what it sent, not what its first packet claims. A request
	// whose buffer would exceed a budget is refused: the client gets
	// StatusNoMemory. Budgets count requested bytes; the caller's
	// allocator may round them up.
	ReasmBudget        int64
	ReasmSessionBudget int64
	ReasmInitial       int
	// ReasmTimeout reclaims a request being received that got no packet
	// (new or retransmitted) for this long (default DefaultReasmTimeout):
	// its peer is gone or stalled far beyond any RTO. Its buffer is
	// released and its retransmissions are answered with StatusNoMemory.
	ReasmTimeout time.Duration
}

// ErrConfig reports an invalid Config.
var ErrConfig = errs.New("rpc/proto: invalid config", cornflakes.ErrConfig)

func (c Config) withDefaults() (Config, error) {
	if c.Credits == 0 {
		c.Credits = DefaultCredits
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.RTO == 0 {
		c.RTO = DefaultRTO
	}
	if c.MaxBacklog == 0 {
		c.MaxBacklog = DefaultMaxBacklog
	}
	if c.DataPerPkt <= 0 {
		return c, fmt.Errorf("%w: DataPerPkt must be positive", ErrConfig)
	}
	if c.MaxMsgSize == 0 {
		c.MaxMsgSize = DefaultMaxMsgSize
		if lim := MaxMsgSizeFor(c.DataPerPkt); c.MaxMsgSize > lim {
			c.MaxMsgSize = lim
		}
	}
	if c.ReasmBudget == 0 {
		c.ReasmBudget = DefaultReasmBudget
	}
	if c.ReasmSessionBudget == 0 {
		c.ReasmSessionBudget = int64(c.Window) * int64(c.MaxMsgSize)
	}
	if c.ReasmInitial <= 0 {
		c.ReasmInitial = 8 * c.DataPerPkt
	}
	if c.ReasmTimeout <= 0 {
		c.ReasmTimeout = DefaultReasmTimeout
	}
	switch {
	case c.Credits < 1 || c.Credits > 1<<12:
		return c, fmt.Errorf("%w: Credits %d not in [1, 4096]", ErrConfig, c.Credits)
	case c.Window < 1 || c.Window > 64 || c.Window&(c.Window-1) != 0:
		return c, fmt.Errorf("%w: Window %d must be a power of two in [1, 64]", ErrConfig, c.Window)
	case c.RTO < 10*time.Microsecond:
		return c, fmt.Errorf("%w: RTO %v below 10µs", ErrConfig, c.RTO)
	case c.MaxMsgSize < 1 || c.MaxMsgSize > MaxMsgSizeFor(c.DataPerPkt):
		return c, fmt.Errorf("%w: MaxMsgSize %d exceeds %d (the 14-bit packet numbers with %d B per packet)",
			ErrConfig, c.MaxMsgSize, MaxMsgSizeFor(c.DataPerPkt), c.DataPerPkt)
	case c.Selective && c.Credits > SackWindow:
		return c, fmt.Errorf("%w: selective retransmission needs Credits ≤ %d", ErrConfig, SackWindow)
	case c.MaxBacklog < 0:
		return c, fmt.Errorf("%w: negative MaxBacklog", ErrConfig)
	}
	c.CC = c.CC.withDefaults()
	return c, nil
}

// MaxMsgSizeFor is the largest message size whose request-plus-response
// packet numbers fit the header's 14 bits with dataPerPkt bytes per packet.
func MaxMsgSizeFor(dataPerPkt int) int {
	// R + S - 1 ≤ MaxPktNum+1 with R = S = ceil(n/dpp) ⇒ ceil(n/dpp) ≤ (MaxPktNum+2)/2.
	n := (MaxPktNum + 2) / 2 * dataPerPkt
	if n > MaxMsgSizeField {
		n = MaxMsgSizeField
	}
	return n
}

// numPkts is the number of packets a message of size n occupies (at least 1).
func numPkts(n, dpp int) int {
	if n == 0 {
		return 1
	}
	return (n + dpp - 1) / dpp
}
