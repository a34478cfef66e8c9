package rpc

import (
	"errors"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
	"github.com/cornflakes-go/cornflakes/rpc/internal/proto"
)

// Errors returned by this package. Test with errors.Is; returned errors may
// wrap them with detail. ErrConcurrentUse, ErrClosed, ErrTooLarge and
// ErrConfig also match the shared identities of package cornflakes, and an
// event loop ended by its closed datapath reports both ErrClosed and
// datapath.ErrClosed.
var (
	// ErrConcurrentUse: an Endpoint method was called while another call
	// (or the event loop) was running on a different goroutine.
	ErrConcurrentUse = errs.New("rpc: endpoint used by two goroutines at once", cornflakes.ErrConcurrentUse)
	// ErrReentrant: Call or RunOnce invoked from inside a handler or
	// continuation (they must not re-enter the event loop).
	ErrReentrant = errors.New("rpc: event loop re-entered from a callback")
	// ErrClosed: the endpoint or nexus is closed.
	ErrClosed = errs.New("rpc: closed", cornflakes.ErrClosed)
	// ErrNoSession: the session does not exist (never created, failed or disconnected).
	ErrNoSession = errors.New("rpc: no such session")
	// ErrNotConnected: the session exists but is not connected yet.
	ErrNotConnected = errors.New("rpc: session not connected")
	// ErrConnectFailed: the connect handshake failed or timed out.
	ErrConnectFailed = errors.New("rpc: connect failed")
	// ErrPeerFailed: the peer stopped answering heartbeats or restarted;
	// requests pending on its sessions fail with this error.
	ErrPeerFailed = errors.New("rpc: peer failed")
	// ErrDisconnected: the session was disconnected.
	ErrDisconnected = errors.New("rpc: session disconnected")
	// ErrSessionBusy: Disconnect of a session with requests pending.
	ErrSessionBusy = errors.New("rpc: session has pending requests")
	// ErrTooLarge: a message larger than the endpoint's MaxMsgSize.
	ErrTooLarge = errs.New("rpc: message too large", cornflakes.ErrTooLarge)
	// ErrBacklogFull: too many requests queued on one session.
	ErrBacklogFull = errors.New("rpc: session backlog full")
	// ErrNoHandler: the server has no handler for the request type.
	ErrNoHandler = errors.New("rpc: no handler registered for the request type")
	// ErrRejected: the server could not run the handler (worker pool full or the handler panicked).
	ErrRejected = errors.New("rpc: request rejected by the server")
	// ErrOverBudget: the server refused a multi-packet request before its
	// handler ran: the request would have exceeded the server's
	// reassembly budget (per session or per endpoint,
	// EndpointConfig.ReasmBudget), its memory ran out, or the request
	// stalled in reassembly past EndpointConfig.ReasmTimeout. The handler
	// did not run; retrying later may succeed.
	ErrOverBudget = errors.New("rpc: request refused: the server's reassembly budget is exhausted")
	// ErrDenied: the server's application refused the request for the
	// session's credential (Request.Deny).
	ErrDenied = errors.New("rpc: permission denied by the server")
	// ErrAlreadyResponded: a request was answered twice, or after its session went away.
	ErrAlreadyResponded = errors.New("rpc: request already answered or its session is gone")
	// ErrInvalidEndpointID: an endpoint id is out of range, taken, or unknown at the peer.
	ErrInvalidEndpointID = errors.New("rpc: invalid endpoint id")
	// ErrBadMessage: an invalid Msg (zero value, or a Buf and an object at once).
	ErrBadMessage = errors.New("rpc: invalid message")
	// ErrEndpointsOpen: Nexus.Close found endpoints not yet closed (it
	// closes the Nexus anyway; their sessions can no longer be managed).
	ErrEndpointsOpen = errors.New("rpc: endpoints still open")
	// ErrConfig: an invalid EndpointConfig, NexusConfig or registration.
	ErrConfig = errs.New("rpc: invalid configuration", cornflakes.ErrConfig)
	// ErrBadSMPacket: a malformed session-management packet.
	ErrBadSMPacket = errors.New("rpc: malformed session-management packet")
)

func mapCoreErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, proto.ErrNoSession):
		return ErrNoSession
	case errors.Is(err, proto.ErrTooLarge):
		return ErrTooLarge
	case errors.Is(err, proto.ErrBacklogFull):
		return ErrBacklogFull
	case errors.Is(err, proto.ErrStaleHandle):
		return ErrAlreadyResponded
	}
	return err
}
