// Package dptest is the conformance suite every datapath.Endpoint
// implementation runs (memnet, udp, xdp, ...):
//
//	func TestConformance(t *testing.T) {
//		dptest.Run(t, func(t *testing.T) dptest.Pair {
//			a, b := openTwoEndpoints(t) // that can reach each other
//			return dptest.Pair{A: a, B: b, Pools: []*mem.Pool{...}}
//		})
//	}
//
// Each subtest gets a fresh Pair from the factory and checks, byte for byte:
// Send, SendSegments and SendObject (zero-copy entries, too many entries so
// the smallest are copied, Serialize errors, objects that lie about their
// Sizes), batching and Flush, Recv into registered buffers, replies in the
// other direction, completion-driven release (the datapath holds a
// reference on every zero-copy segment until the send completed, and then
// releases it; memory the application released and reused meanwhile is never
// what arrives), ErrTooLarge, ErrTooManySegments, ErrConcurrentUse from a
// second goroutine, ErrClosed after Close, Close releasing everything, and
// pool accounting back to zero (the application pool and every pool in
// Pair.Pools) at the end of each subtest.
//
// The suite assumes a lossless, non-reordering path between A and B (memnet
// without faults, loopback, a veth pair); it never asserts timings. Every
// wait is bounded (Timeout).
//
// Object is a hand-written wire.Object for datapath tests that need one
// without generated code.
//
// The set of checks may grow; the Factory/Pair API is stable.
package dptest
