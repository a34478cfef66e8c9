package service

import "time"

// Side tells an Observer which end of a call it sees.
type Side uint8

// The two ends of a call.
const (
	ServerSide Side = iota
	ClientSide
)

func (s Side) String() string {
	if s == ClientSide {
		return "client"
	}
	return "server"
}

// Observer receives every call a Server or Client completes: the method,
// its status code (OK on success, CodeOf the error otherwise: a transport
// error is Unknown, the caller's context error Canceled or
// DeadlineExceeded) and its duration (server: from the request's arrival
// at the handler to its response handed to the endpoint; client: from the
// call to its result). It runs on the goroutine that completed the call
// (an endpoint's loop, a worker, a synchronous caller), so it must be safe
// for concurrent use and cheap. Package metrics implements it.
type Observer interface {
	ObserveCall(side Side, info *MethodInfo, code Code, d time.Duration)
}

// WithServerObserver makes the Server report every call of a registered
// method to o (calls refused before a method is known, such as malformed
// headers or unbound handles, are not reported).
func WithServerObserver(o Observer) ServerOption { return func(s *Server) { s.obs = o } }

// WithClientObserver makes the Client report every call to o, synchronous
// and asynchronous (a call whose bind failed is not reported).
func WithClientObserver(o Observer) ClientOption { return func(c *Client) { c.obs = o } }
