// Package xdp is the AF_XDP kernel-bypass datapath: one AF_XDP socket per
// endpoint, bound to one queue of one interface, whose UMEM is registered
// memory from package mem, so that any value allocated from a pool on the
// endpoint's Space is transmitted without a copy into a packet buffer.
//
// # Memory
//
// The UMEM is a fully committed mem.Space (hugepages when the system has
// them reserved, else transparent hugepages) registered as a whole with
// XDP_UMEM_REG in unaligned-chunk mode (XDP_UMEM_UNALIGNED_CHUNK_FLAG), so
// descriptors point at arbitrary byte offsets: RX frames are ChunkSize
// items of the endpoint's pool; TX descriptors point at the TX buffer
// holding the headers and copied bytes, and straight at zero-copy values.
// Several endpoints may share one Space (Options.Space), and an
// application allocates its values from a pool on Endpoint.Space (or on
// the space it passed in).
//
// # Sending
//
// A packet is one TX buffer (Ethernet, IPv4 and UDP headers, the head, and
// for SendObject the object header and copied fields) followed by one
// descriptor per zero-copy entry, chained with XDP_PKT_CONTD (multi-buffer
// TX, the socket is bound with XDP_USE_SG). A buffer longer than ChunkSize
// is split into several descriptors. Entries outside the UMEM are copied
// into the TX buffer; when an object has more entries than MaxSegments-1
// the smallest are copied (driver.Selector). Every descriptor holds its
// own reference (a Clone) on the memory it points at; the reference is
// released when the kernel returns the descriptor's address on the
// completion ring (reaped by Flush, Recv, Wait and Close), never earlier.
// IPv4 header checksums are always computed; UDP checksums are 0 ("none",
// valid for IPv4) unless Options.UDPChecksum.
//
// # Receiving
//
// The XDP program (built with cilium/ebpf asm instructions, no C compiler)
// redirects IPv4/UDP datagrams addressed to the endpoint's address and
// port (no IP options, not fragmented) into the socket through an XSKMAP
// and passes everything else to the kernel. A datagram that fits in one RX
// frame is delivered zero-copy: Packet.Buf is a window of that frame, and
// a fresh frame goes to the fill ring. A datagram spanning several frames
// (multi-buffer RX, MTU above about 3.8 KB) is copied into one buffer of the
// pool and its frames are recycled at once.
//
// # Modes
//
// Open binds with XDP_ZEROCOPY first and falls back to copy mode
// (Options.Bind: BindAuto; BindZeroCopy fails with ErrNoZeroCopy instead,
// BindCopy skips the attempt; veth has no zero-copy support, and
// Endpoint.Mode or ModeOf reports the mode obtained), attaches the program in
// native mode and falls back to generic (Options.Attach; on veth AttachAuto
// uses generic, which is faster there), and retries a bind that fails with
// EBUSY while the kernel tears down a previous socket on the queue. Sends
// only write descriptors; Flush (or every Config.Batch packets) publishes
// them and kicks the kernel once per burst, only when it asks for a wakeup
// (XDP_USE_NEED_WAKEUP). Counters reports descriptors, kicks and
// completions. Peer MAC addresses come from
// Options.PeerMAC, the kernel's neighbour table (netlink RTM_GETNEIGH), or
// sources of received datagrams; there is no ARP.
//
// One endpoint per interface (one XDP program per interface). Open must
// run in the interface's network namespace (netns.Do); afterwards the
// endpoint works from any goroutine, one at a time (driver.Guard).
// AF_XDP needs root (CAP_NET_ADMIN and CAP_BPF): Available says why not.
package xdp
