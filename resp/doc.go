// Package resp is a Redis-compatible server: RESP2 and RESP3 over TCP with
// Redis 7 semantics, whose large values live in registered memory and are
// written to clients without a copy.
//
// # Data and commands
//
// The keyspace has 16 databases of strings, lists (no element cap) and
// hashes, with millisecond expiry (lazy and active), and answers the
// string, counter, key, expiry, list, blocking-pop, hash, transaction
// (MULTI/EXEC/DISCARD/WATCH), connection (HELLO 2/3, AUTH, CLIENT, SELECT)
// and server (COMMAND, CONFIG, INFO, ACL) commands listed in docs/RESP.md,
// with Redis's replies and error texts: the tests compare them byte for
// byte with a real redis-server. Commands execute one at a time under one
// lock, as in Redis; reading, parsing and writing run outside it, on the
// server's epoll event loops (Linux, TCP) or the connections' goroutines
// (Config.GoroutinePerConn).
//
// # Security and limits
//
// Config.Password (requirepass) and Config.Users (ACL users, full or
// read-only) require AUTH or HELLO ... AUTH; without a password, protected
// mode serves loopback clients only. Connections are bounded
// (Config.MaxConns), so are idle time (Config.IdleTimeout), the time to
// send one command (Config.CommandTimeout), the request sizes (Limits), the
// pending output (Config.OutputLimit) and the dataset (Config.MaxMemory,
// with the noeviction or allkeys-lru policy). Offenders are disconnected
// and counted (Stats, INFO).
//
// # Zero-copy replies
//
// A connection is read with one read (more while each fills its buffer,
// within a bound per event-loop round), every complete command read is
// answered (pipelining) into one batch, and the batch is written with one
// writev; on an event loop, a write that would block keeps the batch until
// the socket is writable and reads nothing meanwhile (TCP backpressure). Values of at least
// Config.Threshold (DefaultThreshold, 512 B, the wire package's) are stored
// in the server's registered pool; a reply carrying one becomes an iovec
// pointing into that memory, with a reference (mem.Buf) taken under the
// keyspace lock and released when the write has returned, so a concurrent
// SET, DEL or expiry of the key cannot change or free the bytes being sent.
// Smaller values and the protocol framing are copied into the connection's
// output buffer.
package resp
