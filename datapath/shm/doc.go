// Package shm is a datapath between processes on one host over shared
// memory, kind "shm" (datapath.Open("shm", cfg)): scatter-gather from
// registered memory with no CPU copy of a zero-copy value on either side.
//
// # Addresses and rendezvous
//
// An shm address is a netip.AddrPort used as a name: nothing is routed.
// Each endpoint listens on a Unix SOCK_SEQPACKET socket named after its
// LocalAddr: the abstract name "@cornflakes-shm/<Namespace>/<ip:port>"
// (Options.Namespace, default "default"), or the path
// "<Dir>/<ip:port>.sock" when Options.Dir is set. Config.Local picks the
// address (invalid: 127.0.0.1; port 0: a free port in [49152, 65535]), so
// a server opened at 127.0.0.1:7000 is reached by sending to
// 127.0.0.1:7000 from any process of the same user (and network
// namespace, for abstract names). The first send to an address connects
// to it; the connection carries packets in both directions, and the
// address a peer announced in its handshake is the From of its packets,
// so replies go back over the same connection.
//
// # Handshake and trust
//
// Before anything is shared, each side checks the other's credentials
// with SO_PEERCRED (default: the same uid; Options.AllowUIDs widens it). A
// refused peer gets a refusal message carrying the reason (ErrRefused) and
// no descriptor. Then each side sends a hello with, as SCM_RIGHTS: its
// connection region (a sealed memfd: descriptor ring, completion ring and
// TX slots), its doorbell eventfd, and the memfd of every registered
// shared space (mem.SpaceConfig.Shared; Options.Spaces and Config.Pool's
// space when shared). The receiver checks every memfd is sealed against
// shrinking (so its read-only mapping can never fault) and as large as
// announced, that the doorbell is an eventfd, and maps everything
// PROT_READ.
//
// What a peer can read: the connection region this endpoint made for it
// (the packets sent to that peer, in TX slots that are reused), and every
// byte of every registered shared space, whatever pool or packet it
// belongs to, for as long as the connection lasts. Nothing else: not the
// endpoint's pool (unless its space is shared), not the Go heap, not other
// peers' connection regions. Register for sending only spaces whose whole
// contents every allowed peer may see.
//
// # Rings
//
// Each direction of a connection is a single-producer single-consumer
// descriptor ring in the sender's region; the receiver gives each packet
// back on a completion ring in its own region. A packet occupies one TX
// slot of the sender: a table of segment descriptors (space, offset,
// length) and a data area for the head and copied bytes. Space 0 is the
// slot's data area; space k is the sender's k-th shared space. Producers
// publish an index (one atomic store per batch, at Flush) and ring the
// peer's eventfd only when the peer announced it is about to sleep in
// Wait; with Config.BusyPoll, Wait spins instead.
//
// # Zero copy
//
// SendObject writes the head, the object's header and copied fields
// straight into the TX slot and each zero-copy entry that lies in a
// registered shared space as a descriptor: the endpoint keeps a reference
// until the receiver's completion. Entries elsewhere, and entries beyond
// Options.MaxZeroCopyBytes held by one peer, are copied into the slot
// (Stats.CopiedBytes, ZeroCopyFallbacks).
//
// On the receiving side, Recv gathers each packet into an RX buffer of the
// endpoint's pool (one copy, like a NIC's DMA into a posted buffer) and
// completes it at once: rpc, kv and every existing consumer of
// Packet.Buf work unchanged. RecvSegments (datapath.SegmentReceiver)
// copies only the head (the slot's bytes) into a small buffer, the
// packet's Hold, and hands the zero-copy segments over as read-only views
// of the sender's memory; wire.DecodeSegments decodes the object in place,
// so its large fields alias the sender's memory. The completion is posted
// when Hold and every clone of it (a decoding arena's, until its Reset)
// were released. Stats count both: RxCopiedBytes, RxHeadBytes,
// RxZeroCopyBytes.
//
// # Never trusting the peer
//
// Everything read from a peer's memory is read once and validated before
// use: a descriptor's slot, segment count, space and range (against the
// geometry and sizes fixed at the handshake); a completion's slot against
// our slots in flight. A bad descriptor or completion is dropped and
// counted (BadDescriptors, BadCompletions); a ring index that jumps beyond
// the ring closes the connection (Violations). A peer that stops draining
// holds at most Options.Slots packets and MaxZeroCopyBytes; sends to it
// then fail with ErrBusy. When a peer hangs up or dies (its socket closes,
// noticed within about a millisecond of the endpoint's next call, or at
// once in Wait), every reference held for it is released, and its memory
// stays mapped only until the application released the segmented packets
// that alias it. Other peers are not affected.
//
// Limits: MaxSlots, MaxMaxSegments, MaxMaxPayload, MaxPeerSpaces. See
// docs/SHM.md for the design and measurements.
package shm
