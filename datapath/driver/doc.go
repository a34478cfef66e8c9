// Package driver holds the helpers that datapath implementations share:
// the code behind a kind registered with datapath.Register, not what an
// application calls. Applications use package datapath (Open, Endpoint,
// Packet, Config) and never need this package.
//
//   - Guard turns overlapping calls on an endpoint into
//     datapath.ErrConcurrentUse and calls after Close into datapath.ErrClosed.
//   - CheckSendObject is the precondition check every SendObject runs, so
//     that every kind refuses the same objects with the same errors.
//   - EntryCollector takes a reference on each zero-copy entry an object
//     reports while it serializes, and Gather lays the packet out as
//     scatter-gather segments.
//   - Selector and CountSegments decide which zero-copy entries stay
//     zero-copy when a packet has more than the scatter-gather budget.
//
// The RPC transport uses EntryCollector for its multi-packet messages.
package driver
