// Package resp is a Redis-compatible server: RESP2 over TCP in front of the
// key-value store of package kv, whose values live in registered memory.
//
// # Commands
//
// PING, ECHO, GET, SET (without options), MGET, MSET, DEL, UNLINK, EXISTS,
// RPUSH, LPUSH, LRANGE, LLEN, DBSIZE, FLUSHALL, FLUSHDB, SELECT 0, QUIT, and
// what clients send when they connect: HELLO (protocol 2; any other version
// is answered "-NOPROTO unsupported protocol version" so that clients such
// as go-redis fall back to RESP2), CLIENT SETNAME/SETINFO/GETNAME/ID,
// COMMAND (an empty array: no command is described), CONFIG GET (only save
// and appendonly, as redis-benchmark asks) and INFO (a few fields). Anything
// else is "-ERR unknown command".
//
// The store does not tell a string from a list of one element: GET of a
// one-element list returns it, RPUSH onto a string makes it a list, and
// LRANGE of a string returns it. GET of a longer list is WRONGTYPE.
//
// # Limits
//
// The parser (Parser, Limits) never trusts a declared size: a bulk string is
// at most DefaultMaxBulk (1 MiB, the store's largest value), a command has
// at most DefaultMaxArgs arguments and occupies at most DefaultMaxCommand
// bytes, an inline command or header line is at most DefaultMaxInline
// bytes, and buffers grow only with bytes actually received (a connection
// buffers at most MaxCommand+MaxInline). Input beyond them, or malformed, is
// answered "-ERR Protocol error: ..." and the connection is closed. A server
// serves at most Config.MaxConns connections and a reply carries at most
// Config.MaxReply value bytes.
//
// # Zero-copy replies
//
// Each connection has one goroutine that reads, answers every complete
// command it has read (pipelining) into one batch, and writes the batch with
// one writev (net.Buffers on the *net.TCPConn): protocol framing and values
// smaller than Config.Threshold (DefaultThreshold, 512 B, the wire
// package's) are copied into the connection's output buffer; a value at or
// above it becomes one iovec pointing into the registered memory that holds
// it. The batch owns one reference (mem.Buf) per such value, taken under
// the store's shard lock, and releases it when the write has returned, so a
// concurrent SET or DEL of the key cannot change or free the bytes being
// sent. A batch is written early when it reaches 256 KiB of copied bytes,
// 512 zero-copy values or 4 MiB of zero-copy bytes.
package resp
