package resp

import (
	"errors"
	"io"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Defaults of Config.
const (
	// DefaultThreshold is the zero-copy threshold: a value of at least this
	// many bytes is stored in registered memory and written straight from it
	// (one more iovec of the connection's writev); a smaller one lives on
	// the Go heap and is copied into the connection's output buffer. It is
	// the wire package's default (wire.DefaultThreshold).
	DefaultThreshold = 512
	// DefaultMaxConns is the most connections served at once (Redis's
	// maxclients); more are answered "-ERR max number of clients reached"
	// and closed.
	DefaultMaxConns = 10000
	// DefaultPoolBytes is the registered memory of a server's own pool.
	DefaultPoolBytes = 1 << 30
	// DefaultCommandTimeout is how long a client may take to send one
	// command once it has started it (slowloris clients); 0 in
	// Config.CommandTimeout means this default, negative means none.
	DefaultCommandTimeout = 30 * time.Second
	// DefaultOutputLimit is the most copied reply bytes one connection may
	// have pending (client-output-buffer-limit, hard); beyond it the
	// connection is closed.
	DefaultOutputLimit = 1 << 30
	// DefaultRecvBuffer is the receive buffer (SO_RCVBUF) an event loop
	// gives a connection that sends large arguments (Config.RecvBuffer).
	DefaultRecvBuffer = 4 << 20
)

// Batch bounds: a reply batch is written (one writev) when the commands
// buffered so far are all answered, or earlier when it holds this many
// copied bytes or zero-copy entries.
const (
	flushBytes   = 256 << 10
	flushEntries = 512
	initBuf      = 1 << 10       // a new connection's read buffer
	readChunk    = 16 << 10      // buffer size classes above keepBuf are readChunk<<i
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

// Config configures a Server. The zero Config is valid: a 1 GiB pool of
// its own, no password (protected mode: loopback clients only), 10,000
// connections, no maxmemory.
type Config struct {
	// Pool holds the values of at least Threshold bytes. It must be
	// Concurrent. Nil: the server makes its own of PoolBytes, and returns
	// its memory to the system whenever no value is left in it.
	Pool *mem.Pool
	// PoolBytes is the size of the server's own pool (default
	// DefaultPoolBytes); ignored when Pool is set.
	PoolBytes int64
	// Threshold is the zero-copy threshold (default DefaultThreshold; a
	// negative value copies every value, which then live on the Go heap).
	Threshold int
	// MaxConns bounds the connections served at once (default
	// DefaultMaxConns).
	MaxConns int
	// Limits bounds what a request may declare (see Limits); MaxCommand is
	// the client-query-buffer-limit.
	Limits Limits
	// Password is requirepass: the default user's password. Empty: the
	// default user needs none.
	Password string
	// Users are ACL users besides "default" (a User named "default"
	// replaces it).
	Users []User
	// NoProtectedMode serves clients from every address even when no
	// password is set. Otherwise, without a password, only loopback
	// clients are served and the others are answered -DENIED (Redis's
	// protected-mode yes).
	NoProtectedMode bool
	// MaxMemory bounds the dataset (an estimate of keys and values, INFO
	// used_memory_dataset) in bytes; 0 is unlimited. MaxMemoryPolicy is
	// PolicyNoEviction (the default: writes that may grow memory are
	// refused with -OOM) or PolicyAllKeysLRU.
	MaxMemory       int64
	MaxMemoryPolicy string
	// IdleTimeout closes a connection idle (no command started) this long
	// (Redis's timeout; 0: never).
	IdleTimeout time.Duration
	// CommandTimeout closes a connection that has not finished sending a
	// command this long after starting it (default DefaultCommandTimeout;
	// negative: never).
	CommandTimeout time.Duration
	// OutputLimit bounds the copied reply bytes pending for one connection
	// (default DefaultOutputLimit).
	OutputLimit int
	// GoroutinePerConn serves every connection on a goroutine of its own
	// over Go's netpoller instead of the server's event loops. Without it,
	// on Linux, TCP connections are served by event loops (epoll)
	// and only connections of other listeners, and a connection while a
	// blocking pop waits or after a protocol error, get a goroutine.
	GoroutinePerConn bool
	// EventLoops is the number of event loops (default GOMAXPROCS/2, at
	// least 1).
	EventLoops int
	// BusyPoll makes an event loop poll its sockets without sleeping
	// (epoll_wait with no timeout) for this long after its last event
	// before it sleeps in epoll_wait again (0: never poll, always sleep).
	// A client's request then finds the loop awake: neither it nor the
	// loop pays a wake-up (a context switch, an inter-processor
	// interrupt), for a loop that keeps one CPU busy while requests keep
	// coming within BusyPoll of each other. Ignored by connections on
	// goroutines.
	BusyPoll time.Duration
	// RecvBuffer is the socket receive buffer (SO_RCVBUF, bytes) an event
	// loop sets on a connection when it first receives a large argument
	// (32 KiB or more; default DefaultRecvBuffer; negative: never, the
	// kernel's autotuning only). The kernel starts a connection at
	// net.ipv4.tcp_rmem's default (128 KiB) and grows it over round trips
	// as the server reads: a pipeline of large values on a new connection
	// (16 SETs of 64 KiB) crosses in many windows, each a wake-up of both
	// sides. A set buffer is fixed (no autotuning) and capped by
	// net.core.rmem_max; it bounds what the kernel holds for the
	// connection (Linux reserves twice the value for its bookkeeping),
	// where autotuning may grow to tcp_rmem's maximum. Connections that
	// never send a large argument keep the kernel's default: for batches
	// of smaller values a larger window only keeps more of them in
	// flight, out of cache. Ignored by connections on goroutines.
	RecvBuffer int
	// NoIOUring makes an event loop's reads and writes one system call
	// each. By default (Linux with io_uring) a loop makes the reads of
	// every connection an epoll_wait reported ready with one
	// io_uring_enter, and the writes of every batch it answered with
	// another: three system calls per loop turn however many connections
	// were ready, where Redis makes one read and one write per connection.
	// Where io_uring is unavailable (io_uring_disabled, seccomp, an old
	// kernel) the loop falls back to one call each. Ignored by connections
	// on goroutines.
	NoIOUring bool
}

// Server is a Redis-compatible (RESP2 and RESP3) server over TCP. Its
// keyspace (16 databases of strings, lists and hashes with expiry) is
// guarded by one mutex: commands execute one at a time, as in Redis. A
// connection is served by an event loop (or a goroutine of its own, see
// Config.GoroutinePerConn): it reads, answers every complete command in
// what it read, and writes the answers with one writev.
type Server struct {
	cfg     Config
	pool    *mem.Pool // the keyspace's pool
	ownPool bool

	kmu sync.Mutex // guards ks and every conn's keyspace-related state
	ks  *keyspace

	umu       sync.RWMutex // guards users (the map; each user's rules are atomic)
	users     map[string]*user
	maxMemory atomic.Int64
	policy    atomic.Int32 // 0 noeviction, 1 allkeys-lru
	idle      atomic.Int64 // IdleTimeout in ns
	nextID    atomic.Int64
	freeReq   atomic.Bool // return memory to the system soon

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	clients   map[*conn]struct{}
	wg        sync.WaitGroup
	loops     []*loop // the event loops (none: a goroutine per connection)
	nextLoop  int     // the loop of the next connection (guarded by mu)
	done      chan struct{}

	stats struct {
		conns, commands, errors, zc, zcBytes                 atomic.Uint64
		rejected, denied, idleClosed, slowClosed, queryLimit atomic.Uint64
		outputLimit, authFailed, aclDenied, bigArgs          atomic.Uint64
	}
	// bigPending is the pool memory held for large argument bodies not
	// yet received (maxBigPending).
	bigPending atomic.Int64

	// bigBufs recycles read buffers larger than keepBuf, which a
	// connection holds only while a command that needs one is buffered:
	// bigBufs[i] holds *[]byte of readChunk<<i bytes.
	bigBufs [bigClasses]sync.Pool
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("resp: server closed")

// NewServer returns a server that serves nothing until Serve or
// ListenAndServe. It starts the background expiry and memory-return
// goroutine, which Close stops.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.CommandTimeout == 0 {
		cfg.CommandTimeout = DefaultCommandTimeout
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.RecvBuffer == 0 {
		cfg.RecvBuffer = DefaultRecvBuffer
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Server{cfg: cfg, listeners: map[net.Listener]struct{}{}, clients: map[*conn]struct{}{},
		users: map[string]*user{}, done: make(chan struct{})}
	s.users["default"] = newUser("default", rulesOf(User{Name: "default", Password: cfg.Password}, true))
	for _, u := range cfg.Users {
		if u.Name == "" || hasSpaces(u.Name) {
			return nil, errors.New("resp: a user name must be non-empty without spaces")
		}
		s.users[u.Name] = newUser(u.Name, rulesOf(u, u.Name == "default"))
	}
	switch cfg.MaxMemoryPolicy {
	case "", PolicyNoEviction:
	case PolicyAllKeysLRU:
		s.policy.Store(1)
	default:
		return nil, errors.New("resp: maxmemory policy " + strconv.Quote(cfg.MaxMemoryPolicy) + " (want noeviction or allkeys-lru)")
	}
	s.maxMemory.Store(cfg.MaxMemory)
	s.idle.Store(int64(cfg.IdleTimeout))
	if cfg.Pool != nil {
		if !cfg.Pool.Concurrent() {
			return nil, errors.New("resp: the pool must be Concurrent")
		}
		s.pool = cfg.Pool
	} else {
		p, err := newOwnPool(cfg.PoolBytes)
		if err != nil {
			return nil, err
		}
		s.pool, s.ownPool = p, true
	}
	storeMin := cfg.Threshold
	if storeMin < 0 {
		storeMin = 0 // no value in the pool
	}
	s.ks = newKeyspace(s.pool, storeMin)
	if !cfg.GoroutinePerConn {
		if err := s.startLoops(); err != nil {
			if s.ownPool {
				_ = closeOwnPool(s.pool)
			}
			return nil, err
		}
	}
	s.wg.Add(1)
	go s.background()
	return s, nil
}

// newOwnPool returns a pool of size bytes (DefaultPoolBytes when <= 0) in
// an address space of its own, of ordinary pages not locked in RAM
// (closeOwnPool closes both), as Redis' allocator has them. A locked
// space populates each region when the pool grows, and a hugepage is
// zeroed whole (2 MiB) at its first byte: either, for the 1 MiB bodies
// that 300 slowloris clients only declared, kept every connection of
// the event loop waiting 15-250 ms (docs/perf/sess27.md). Nothing of a
// Redis server needs its values pinned; the zero-copy writev of values
// needs registered memory, not locked memory.
func newOwnPool(size int64) (*mem.Pool, error) {
	if size <= 0 {
		size = DefaultPoolBytes
	}
	sp, err := mem.NewSpace(mem.SpaceConfig{Size: size, Hugepages: mem.HugepagesNone})
	if err != nil {
		return nil, err
	}
	p, err := mem.NewPool(mem.PoolConfig{Name: "resp", Concurrent: true, MaxBytes: size, Space: sp})
	if err != nil {
		_ = sp.Close()
		return nil, err
	}
	return p, nil
}

// closeOwnPool closes a pool of newOwnPool and its space.
func closeOwnPool(p *mem.Pool) error {
	err := p.Close()
	if err2 := p.Space().Close(); err == nil {
		err = err2
	}
	return err
}

// Keys returns the number of keys in all databases (expired keys not yet
// removed included).
func (s *Server) Keys() int {
	s.kmu.Lock()
	defer s.kmu.Unlock()
	n := 0
	for _, d := range s.ks.dbs {
		n += len(d.keys)
	}
	return n
}

// FlushAll removes every key, as FLUSHALL.
func (s *Server) FlushAll() {
	s.kmu.Lock()
	for _, d := range s.ks.dbs {
		s.ks.touchAll(d)
		s.ks.flush(d)
	}
	s.kmu.Unlock()
	s.afterFlush()
}

// Stats are a server's counters since NewServer.
type Stats struct {
	Conns       uint64 // connections accepted and served
	Commands    uint64 // commands answered
	Errors      uint64 // error replies (protocol errors included)
	ZeroCopy    uint64 // values written from registered memory without a copy
	ZCBytes     uint64 // their bytes
	Rejected    uint64 // connections refused: maxclients reached
	Denied      uint64 // connections refused: protected mode
	IdleClosed  uint64 // connections closed by IdleTimeout
	SlowClosed  uint64 // connections closed by CommandTimeout
	QueryLimit  uint64 // connections closed for a command over the limits
	OutputLimit uint64 // connections closed over OutputLimit
	AuthFailed  uint64 // AUTH and HELLO AUTH refused
	ACLDenied   uint64 // commands refused to read-only users
	BigArgs     uint64 // arguments of at least 32 KiB received into a pool buffer of their own
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st := &s.stats
	return Stats{st.conns.Load(), st.commands.Load(), st.errors.Load(), st.zc.Load(), st.zcBytes.Load(),
		st.rejected.Load(), st.denied.Load(), st.idleClosed.Load(), st.slowClosed.Load(), st.queryLimit.Load(),
		st.outputLimit.Load(), st.authFailed.Load(), st.aclDenied.Load(), st.bigArgs.Load()}
}

// ListenAndServe listens on the TCP address addr and serves it until Close.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// protected reports whether protected mode refuses non-loopback clients.
func (s *Server) protected() bool {
	if s.cfg.NoProtectedMode {
		return false
	}
	s.umu.RLock()
	defer s.umu.RUnlock()
	for _, u := range s.users {
		if !u.rules.Load().nopass {
			return false
		}
	}
	return true
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return !ok || ta.IP.IsLoopback()
}

const deniedMsg = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. If you want to connect from external computers, set a password " +
	"(--requirepass) or disable protected mode (--protected-mode=false).\r\n"

// Serve accepts connections on ln until Close (then it returns
// ErrServerClosed) or until Accept fails. It closes ln when it returns.
// With event loops (Linux) and a TCP listener, the first loop accepts
// from ln too while Serve runs, so that a new connection is served
// without waiting for a free P; both admit connections the same way.
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
	if len(s.loops) > 0 { // the first loop accepts too (server_accept_linux.go)
		if ll := s.loops[0].listen(ln); ll != nil {
			defer s.loops[0].unlisten(ll)
		}
	}
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
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(10 * time.Millisecond) // out of descriptors: let some close
				continue
			}
			return err
		}
		if s.protected() && !isLoopback(c.RemoteAddr()) {
			s.stats.denied.Add(1)
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(c, deniedMsg)
			_ = c.Close()
			continue
		}
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			_ = c.Close()
			return ErrServerClosed
		case len(s.clients) >= s.cfg.MaxConns:
			s.mu.Unlock()
			s.stats.rejected.Add(1)
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(c, "-ERR max number of clients reached\r\n")
			_ = c.Close()
			continue
		}
		cn := s.newConn(c)
		s.clients[cn] = struct{}{}
		s.wg.Add(1)
		s.stats.conns.Add(1)
		if len(s.loops) > 0 {
			if fd := detach(c); fd >= 0 {
				cn.c = nil
				s.addToLoopLocked(cn, fd)
				continue
			}
		}
		s.mu.Unlock()
		go s.serveConn(cn)
	}
}

// Close stops the listeners, closes every connection, waits for their
// goroutines and the background goroutine, frees every value and, when
// the server made its own pool, closes it (an error names references
// still held).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for ln := range s.listeners {
		_ = ln.Close()
	}
	for cn := range s.clients {
		if cn.c != nil {
			_ = cn.c.Close()
		}
	}
	s.mu.Unlock()
	for _, l := range s.loops {
		l.wake()
	}
	s.wg.Wait()
	for _, l := range s.loops {
		l.free()
	}
	s.kmu.Lock()
	for _, d := range s.ks.dbs {
		s.ks.flush(d)
	}
	s.kmu.Unlock()
	if s.ownPool {
		return closeOwnPool(s.pool)
	}
	return nil
}

// afterFlush asks the background goroutine to return freed memory to the
// system.
func (s *Server) afterFlush() { s.scheduleFree() }

func (s *Server) scheduleFree() { s.freeReq.Store(true) }

// background runs active expiry (every 100 ms) and returns memory to the
// system after large deletions: the Go heap (debug.FreeOSMemory) and, when
// no value is left in it, the server's own pool (replaced by an empty one,
// the old one closed, which decommits its regions).
func (s *Server) background() {
	defer s.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var lastHeap uint64
	ticks := 0
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ticks++
		s.kmu.Lock()
		s.ks.tick()
		expiring := false
		for _, d := range s.ks.dbs {
			if len(d.expires) > 0 {
				expiring = true
				break
			}
		}
		if expiring && s.ks.activeExpire(25*time.Millisecond) > 0 {
			s.serveBlocked()
		}
		if s.ownPool && s.pool.InUse() == 0 && s.pool.Stats().Bytes > 0 {
			if p, err := newOwnPool(s.cfg.PoolBytes); err == nil {
				old := s.pool
				s.pool, s.ks.pool = p, p
				_ = closeOwnPool(old)
			}
		}
		s.kmu.Unlock()
		if ticks%10 == 0 { // every second: has the heap shrunk by half?
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if lastHeap > 64<<20 && ms.HeapAlloc < lastHeap/2 {
				s.freeReq.Store(true)
			}
			lastHeap = ms.HeapAlloc
		}
		if s.freeReq.Swap(false) {
			debug.FreeOSMemory()
		}
	}
}

func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}
