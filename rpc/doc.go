// Package rpc is an eRPC-style RPC transport (Kalia et al., NSDI'19) over
// any datapath.Endpoint, co-designed with Cornflakes serialization.
//
// A process has one Nexus: the handler registry (by request type), the
// session-management UDP socket (connect and disconnect handshakes with
// retries, heartbeats, failure detection) and a worker pool. Each goroutine
// that does RPC owns one Endpoint with its event loop (RunOnce, Run) over one
// datapath endpoint.
//
// Clients open sessions to (Nexus address, endpoint id) with Connect and send
// requests with Enqueue (asynchronous, continuation on the event loop) or
// Call (synchronous, honours ctx deadlines and cancellation). Servers
// register Dispatch handlers (run in the event loop; single-packet requests
// are served from the receive buffer) or Worker handlers (run on the worker
// pool); a handler answers with Request.Respond*, now or later, and may issue
// nested RPCs. Messages are registered buffers (BufMsg), Cornflakes objects
// (ObjectMsg: serialize-and-send, zero-copy entries split across packets by
// offset) or bytes to copy (BytesMsg).
//
// The wire protocol (16-byte header, credits, request windows, CR/RFR,
// go-back-N or selective retransmission, at-most-once execution, Timely and
// a Carousel rate limiter) lives in the pure state machine of
// rpc/internal/proto. docs/RPC.md describes the header layout, the protocol
// rules, buffer lifetimes and the benchmarks.
//
// Buffer lifetimes: messages passed to Enqueue, Call and Respond are always
// consumed; Request.Data is valid until the request is answered;
// Response.Data only during the continuation (Response.Retain keeps it);
// Call returns an owned mem.Buf. Memory is never released while a queued
// packet, a retransmission or the rate limiter still refers to it.
package rpc
