package resp

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/mem"
)

// Defaults of Config.
const (
	// DefaultThreshold is the zero-copy threshold: a value of at least this
	// many bytes is written straight from registered memory (one more iovec
	// of the connection's writev); a smaller one is copied into the
	// connection's output buffer. It is the wire package's default
	// (wire.DefaultThreshold).
	DefaultThreshold = 512
	// DefaultMaxConns is the most connections served at once; more are
	// answered "-ERR max number of clients reached" and closed.
	DefaultMaxConns = 256
	// DefaultMaxReply is the most value bytes one command's reply may carry
	// (MGET, LRANGE); a larger one is an error reply.
	DefaultMaxReply = 64 << 20
	// DefaultPoolBytes is the registered memory of a server's own pool.
	DefaultPoolBytes = 1 << 30
	// DefaultShards is the shard count of a server's own store.
	DefaultShards = 64
)

// Batch bounds: a reply batch is written (one writev) when the commands
// buffered so far are all answered, or earlier when it holds this many
// copied bytes or zero-copy entries.
const (
	flushBytes   = 256 << 10
	flushEntries = 512
	readChunk    = 16 << 10      // initial read buffer and smallest read
	keepBuf      = 8 * readChunk // a read buffer up to this size is kept when idle
	bigClasses   = 24            // read buffer sizes readChunk<<i recycled (up to 128 GiB)
)

// bufClass returns i when n is readChunk<<i, else -1.
func bufClass(n int) int {
	for i := 0; i < bigClasses; i++ {
		if readChunk<<i == n {
			return i
		}
	}
	return -1
}

// Config configures a Server. The zero Config is valid.
type Config struct {
	// Store holds the data. Its pool must be Concurrent (connections run on
	// their own goroutines and release references there). Nil: the server
	// makes a Concurrent pool of PoolBytes and a store of DefaultShards, and
	// Close clears and closes them; a given Store is left as it is.
	Store *kv.Store
	// PoolBytes is the size of the server's own pool (default
	// DefaultPoolBytes); ignored when Store is set.
	PoolBytes int64
	// Threshold is the zero-copy threshold (default DefaultThreshold; a
	// negative value copies every value).
	Threshold int
	// MaxConns bounds the connections served at once (default
	// DefaultMaxConns).
	MaxConns int
	// MaxReply bounds the value bytes of one reply (default DefaultMaxReply).
	MaxReply int
	// Limits bounds what a request may declare (see Limits).
	Limits Limits
}

// Server is a Redis-compatible (RESP2) server over TCP backed by a kv.Store.
// Each connection is served by one goroutine: it reads, answers every
// complete command in what it read, and writes the answers with one writev.
type Server struct {
	cfg   Config
	store *kv.Store
	pool  *mem.Pool // owned, or nil

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup

	stats struct{ conns, commands, errors, zc, zcBytes atomic.Uint64 }

	// bigBufs recycles read buffers larger than keepBuf, which a
	// connection holds only while a command that needs one is buffered:
	// bigBufs[i] holds *[]byte of readChunk<<i bytes.
	bigBufs [bigClasses]sync.Pool
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("resp: server closed")

// NewServer returns a server that serves nothing until Serve or
// ListenAndServe.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxReply <= 0 {
		cfg.MaxReply = DefaultMaxReply
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Server{cfg: cfg, listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}}
	if cfg.Store != nil {
		if !cfg.Store.Pool().Concurrent() {
			return nil, errors.New("resp: the store's pool must be Concurrent")
		}
		s.store = cfg.Store
		return s, nil
	}
	if cfg.PoolBytes <= 0 {
		cfg.PoolBytes = DefaultPoolBytes
	}
	p, err := mem.NewPool(mem.PoolConfig{Name: "resp", Concurrent: true, MaxBytes: cfg.PoolBytes})
	if err != nil {
		return nil, err
	}
	s.pool, s.store = p, kv.NewStore(p, DefaultShards)
	return s, nil
}

// Store is the server's store.
func (s *Server) Store() *kv.Store { return s.store }

// Stats are a server's counters since NewServer.
type Stats struct {
	Conns    uint64 // connections accepted and served
	Commands uint64 // commands answered
	Errors   uint64 // error replies (protocol errors included)
	ZeroCopy uint64 // values written from registered memory without a copy
	ZCBytes  uint64 // their bytes
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	return Stats{s.stats.conns.Load(), s.stats.commands.Load(), s.stats.errors.Load(), s.stats.zc.Load(), s.stats.zcBytes.Load()}
}

// ListenAndServe listens on the TCP address addr and serves it until Close.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Close (then it returns
// ErrServerClosed) or until Accept fails. It closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		_ = ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			_ = c.Close()
			return ErrServerClosed
		case len(s.conns) >= s.cfg.MaxConns:
			s.mu.Unlock()
			_, _ = io.WriteString(c, "-ERR max number of clients reached\r\n")
			_ = c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.stats.conns.Add(1)
		go s.serveConn(c)
	}
}

// Close stops the listeners, closes every connection, waits for their
// goroutines and, when the server made its own store, clears it and
// closes its pool (an error names references still held).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for ln := range s.listeners {
		_ = ln.Close()
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if s.pool != nil {
		s.store.Clear()
		return s.pool.Close()
	}
	return nil
}

func (s *Server) serveConn(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
		s.wg.Done()
	}()
	cn := &conn{srv: s, c: c, in: make([]byte, readChunk)}
	cn.p.Limits = s.cfg.Limits
	defer cn.res.Release()
	defer cn.out.release()
	defer func() {
		if len(cn.in) > keepBuf {
			cn.putBig()
		}
	}()
	cn.serve()
}

// conn is one connection's state, owned by its goroutine.
type conn struct {
	srv  *Server
	c    net.Conn
	p    Parser
	in   []byte // read buffer: in[r:w] is unconsumed
	r, w int
	out  output
	res  kv.Result
	q    kv.Query
	vals []mem.Buf // GET/MGET's values, gathered before the reply
	quit bool
	// filled: the last Read filled all the room it was given, so more
	// input is probably waiting (pipelined large commands): the buffer
	// grows, up to keepBuf, to take it in fewer reads and answer it in
	// fewer writes.
	filled bool
	// While in is larger than keepBuf: spare is the buffer it replaced,
	// taken back once in is drained, and box is in's sync.Pool box (nil
	// when in was not taken from the pool).
	spare []byte
	box   *[]byte
}

// grow replaces the read buffer by one of size bytes (from the server's
// pool when size is over keepBuf) holding its unconsumed bytes, which
// start at in[0].
func (cn *conn) grow(size int) {
	var nb []byte
	var box *[]byte
	if size > keepBuf {
		if i := bufClass(size); i >= 0 {
			if b, ok := cn.srv.bigBufs[i].Get().(*[]byte); ok {
				box, nb = b, *b
			}
		}
	}
	if nb == nil {
		nb = make([]byte, size)
	}
	cn.w = copy(nb, cn.in[:cn.w])
	if len(cn.in) > keepBuf {
		cn.putBig()
	} else if size > keepBuf {
		cn.spare = cn.in
	}
	cn.in, cn.box = nb, box
}

// putBig gives the read buffer (larger than keepBuf) back to the
// server's pool; the caller replaces it.
func (cn *conn) putBig() {
	if i := bufClass(len(cn.in)); i >= 0 {
		if cn.box == nil {
			cn.box = new([]byte)
		}
		*cn.box = cn.in
		cn.srv.bigBufs[i].Put(cn.box)
	}
	cn.box = nil
}

func (cn *conn) serve() {
	lim := cn.srv.cfg.Limits
	maxBuf := lim.MaxCommand + lim.MaxInline
	for {
		// Answer every complete command buffered.
		for !cn.quit {
			args, n, err := cn.p.Next(cn.in[cn.r:cn.w])
			if err != nil {
				cn.srv.stats.errors.Add(1)
				cn.out.err(err.Error())
				cn.closeAfterError()
				return
			}
			if n == 0 {
				break
			}
			if len(args) > 0 {
				cn.exec(args)
			}
			cn.r += n // after exec: args alias the buffer
			if cn.out.full() {
				if cn.out.flush(cn.c) != nil {
					return
				}
			}
		}
		if cn.out.pending() && cn.out.flush(cn.c) != nil {
			return
		}
		if cn.quit {
			return
		}
		// Make room: move the partial command to the front, grow (doubling,
		// up to maxBuf) when it fills the buffer or, up to keepBuf, when
		// the last read filled it; shrink when idle.
		if cn.r == cn.w && len(cn.in) > keepBuf {
			cn.putBig()
			cn.in, cn.spare, cn.r, cn.w = cn.spare, nil, 0, 0
			if cn.in == nil {
				cn.in = make([]byte, readChunk)
			}
		}
		if cn.r > 0 {
			cn.w = copy(cn.in, cn.in[cn.r:cn.w])
			cn.r = 0
		}
		if cn.w == len(cn.in) || (len(cn.in)-cn.w < readChunk/4 && len(cn.in) < maxBuf) ||
			(cn.filled && len(cn.in) < min(keepBuf, maxBuf)) {
			if len(cn.in) >= maxBuf {
				// Unreachable: the parser's limits keep a command within maxBuf.
				cn.out.err("Protocol error: command too large")
				cn.closeAfterError()
				return
			}
			cn.grow(min(2*len(cn.in), maxBuf))
		}
		n, err := cn.c.Read(cn.in[cn.w:])
		cn.filled = n == len(cn.in)-cn.w
		cn.w += n
		if err != nil && n == 0 {
			return
		}
	}
}

// closeAfterError writes the pending replies (ending with the error), then
// half-closes and discards what the client still sends for a moment (at
// most lingerBytes, lingerTime): closing a socket with unread input resets
// the connection, and the client would lose the error reply.
func (cn *conn) closeAfterError() {
	if cn.out.flush(cn.c) != nil {
		return
	}
	if tc, ok := cn.c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		_ = tc.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, tc, lingerBytes)
	}
}

const (
	lingerTime  = 100 * time.Millisecond
	lingerBytes = 1 << 20
)

// output is a batch of replies: framing and small values copied into buf,
// large values as references into registered memory, written with one
// writev (net.Buffers) by flush.
type output struct {
	buf   []byte
	zc    []mem.Buf   // owned references, released after the write
	marks []int       // zc[i] goes after buf[:marks[i]]
	iov   net.Buffers // flush's iovecs (kept for their capacity)
	wv    net.Buffers // what WriteTo consumes (a field: no allocation)
	bytes int         // bytes of zc
}

func (o *output) pending() bool { return len(o.buf) > 0 || len(o.zc) > 0 }

func (o *output) full() bool {
	return len(o.buf) >= flushBytes || len(o.zc) >= flushEntries || o.bytes >= flushBytes*16
}

// zeroCopy appends b (an owned reference, now the output's) as an iovec.
func (o *output) zeroCopy(b mem.Buf) {
	o.zc = append(o.zc, b)
	o.marks = append(o.marks, len(o.buf))
	o.bytes += b.Len()
}

// flush writes the batch and releases its references, whether or not the
// write succeeded.
func (o *output) flush(w io.Writer) error {
	iov := o.iov[:0]
	last := 0
	for i, b := range o.zc {
		if m := o.marks[i]; m > last {
			iov = append(iov, o.buf[last:m])
			last = m
		}
		iov = append(iov, b.Bytes())
	}
	if last < len(o.buf) {
		iov = append(iov, o.buf[last:])
	}
	o.iov = iov[:0]
	var err error
	if len(iov) == 1 {
		_, err = w.Write(iov[0])
	} else if len(iov) > 1 {
		o.wv = iov
		_, err = o.wv.WriteTo(w) // writev on a *net.TCPConn
		o.wv = nil
	}
	clear(o.iov[:cap(o.iov)]) // drop the slices into registered memory
	o.release()
	if cap(o.buf) > 4*flushBytes {
		o.buf = nil
	}
	return err
}

func (o *output) release() {
	for i, b := range o.zc {
		_ = b.Release()
		o.zc[i] = mem.Buf{}
	}
	o.zc, o.marks, o.buf, o.bytes = o.zc[:0], o.marks[:0], o.buf[:0], 0
}

func (o *output) simple(s string) {
	o.buf = append(o.buf, '+')
	o.buf = append(o.buf, s...)
	o.buf = append(o.buf, '\r', '\n')
}

func (o *output) err(s string) {
	o.buf = append(o.buf, '-')
	if !hasCode(s) {
		o.buf = append(o.buf, "ERR "...)
	}
	for i := 0; i < len(s); i++ { // an error line must not break the framing
		if c := s[i]; c == '\r' || c == '\n' {
			o.buf = append(o.buf, ' ')
		} else {
			o.buf = append(o.buf, c)
		}
	}
	o.buf = append(o.buf, '\r', '\n')
}

// hasCode reports whether s starts with an error code of its own instead
// of the generic ERR.
func hasCode(s string) bool {
	return strings.HasPrefix(s, "WRONGTYPE ") || strings.HasPrefix(s, "NOPROTO ")
}

func (o *output) int(n int64) {
	o.buf = append(o.buf, ':')
	o.buf = appendInt(o.buf, n)
	o.buf = append(o.buf, '\r', '\n')
}

func (o *output) arrayHeader(n int) {
	o.buf = append(o.buf, '*')
	o.buf = appendInt(o.buf, int64(n))
	o.buf = append(o.buf, '\r', '\n')
}

func (o *output) null() { o.buf = append(o.buf, "$-1\r\n"...) }

func (o *output) bulk(b []byte) {
	o.bulkHeader(len(b))
	o.buf = append(o.buf, b...)
	o.buf = append(o.buf, '\r', '\n')
}

func (o *output) bulkString(s string) {
	o.bulkHeader(len(s))
	o.buf = append(o.buf, s...)
	o.buf = append(o.buf, '\r', '\n')
}

func (o *output) bulkHeader(n int) {
	o.buf = append(o.buf, '$')
	o.buf = appendInt(o.buf, int64(n))
	o.buf = append(o.buf, '\r', '\n')
}

// value writes one stored value as a bulk string and takes ownership of
// its reference b: at or above threshold (threshold >= 0) it is written
// from registered memory, otherwise copied and released at once.
func (o *output) value(b mem.Buf, threshold int) bool {
	o.bulkHeader(b.Len())
	if threshold >= 0 && b.Len() >= threshold {
		o.zeroCopy(b)
		o.buf = append(o.buf, '\r', '\n')
		return true
	}
	o.buf = append(o.buf, b.Bytes()...)
	o.buf = append(o.buf, '\r', '\n')
	_ = b.Release()
	return false
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
