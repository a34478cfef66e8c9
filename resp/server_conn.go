package resp

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
)

// newConn makes the state of a connection on c (nil for a connection of
// an event loop, which sets fd).
func (s *Server) newConn(c net.Conn) *conn {
	now := time.Now()
	cn := &conn{srv: s, c: c, fd: -1, in: make([]byte, initBuf), id: s.nextID.Add(1), created: now}
	if c != nil {
		cn.addr, cn.laddr = addrString(c.RemoteAddr()), addrString(c.LocalAddr())
	}
	cn.lastCmd.Store(now.UnixNano())
	cn.p.Limits = s.cfg.Limits
	cn.out.proto = 2
	cn.pubProto.Store(2)
	if u := s.user("default"); u != nil {
		if r := u.rules.Load(); r.nopass && r.enabled {
			cn.user = u
		}
	}
	return cn
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// serveConn serves cn on the calling goroutine until it is closed.
func (s *Server) serveConn(cn *conn) {
	defer s.dropConn(cn)
	cn.serve()
}

// dropConn releases what a closed (or closing) connection holds: its
// place among the clients, its socket (cn.c; an event loop closes fd
// itself), its watched keys, its output's references and a large read
// buffer.
func (s *Server) dropConn(cn *conn) {
	s.mu.Lock()
	delete(s.clients, cn)
	s.mu.Unlock()
	if cn.c != nil {
		_ = cn.c.Close()
	}
	s.kmu.Lock()
	cn.unwatchAll()
	s.kmu.Unlock()
	cn.out.release()
	cn.releaseBig()
	if bufClass(len(cn.in)) >= 0 {
		cn.putBig()
	}
	s.wg.Done()
}

// conn is one connection's state, owned by the goroutine serving it (its
// own, or its event loop's; the fields
// about the keyspace — watched keys, dirtyCAS — are guarded by the
// keyspace lock; the pub* fields are what CLIENT LIST of another
// connection reads).
type conn struct {
	srv *Server
	c   net.Conn // the connection when served by a goroutine of its own
	fd  int      // the socket when served by an event loop, else -1
	lp  *loop    // that event loop
	// wantWrite: (event loop) a write is under way; the connection waits
	// until the socket is writable and reads nothing meanwhile (TCP
	// backpressure).
	wantWrite bool
	queued    bool // (event loop) in the loop's pending writes
	p         Parser
	in        []byte // read buffer: in[r:w] is unconsumed
	r, w      int
	out       output
	quit      bool
	// filled: the last Read filled all the room it was given, so more
	// input is probably waiting (pipelined large commands): the buffer
	// grows, up to keepBuf, to take it in fewer reads and answer it in
	// fewer writes.
	filled bool
	// lastRead: (event loop) the bytes of the connection's last read,
	// what its next is expected to bring (ringReads).
	lastRead int
	// While in is larger than keepBuf: spare is the buffer it replaced,
	// taken back once in is drained, and box is in's sync.Pool box (nil
	// when in was not taken from the pool).
	spare []byte
	box   *[]byte
	// A large argument's body being received (server_bigarg.go): big
	// (bigBuf its bytes, bigN of them received), and the complete bodies
	// of the command being parsed, owned until it has executed.
	big    mem.Buf
	bigBuf []byte
	bigN   int
	bigs   []mem.Buf
	// bigLast: the last command executed had a large argument (readRoom).
	bigLast bool
	// rcvSet: (event loop) the socket's receive buffer has been set
	// (Config.RecvBuffer), or will not be.
	rcvSet bool

	id          int64
	created     time.Time
	addr, laddr string
	dbi         int
	name        string
	user        *user // nil: not authenticated
	inMulti     bool
	multiErr    bool
	inExec      bool
	queue       [][][]byte
	watched     []blockKey
	dirtyCAS    bool

	blocked      *waiter
	blockTimeout time.Duration

	deadline time.Time // the read deadline set
	cmdStart time.Time // when the buffered unfinished command started

	lastCmd  atomic.Int64
	pubName  atomic.Pointer[string]
	pubUser  atomic.Pointer[string]
	pubDB    atomic.Int32
	pubProto atomic.Int32
}

// publish makes the connection's name, user, database and protocol
// visible to CLIENT LIST on other connections.
func (cn *conn) publish() {
	name := cn.name
	cn.pubName.Store(&name)
	if cn.user != nil {
		u := cn.user.name
		cn.pubUser.Store(&u)
	}
	cn.pubDB.Store(int32(cn.dbi))
	cn.pubProto.Store(int32(cn.out.proto))
}

// grow replaces the read buffer by one of size bytes (from the server's
// pool when size is one of its classes, readChunk<<i) holding its
// unconsumed bytes, which start at in[0]. The buffer replaced goes back
// to the pool (a connection's buffer grows from initBuf by doubling:
// made anew each time, a new connection sending pipelined values cleared
// and faulted in 250 KiB, and left it to the collector), except the one
// kept as spare.
func (cn *conn) grow(size int) {
	var nb []byte
	var box *[]byte
	if i := bufClass(size); i >= 0 {
		if b, ok := cn.srv.bigBufs[i].Get().(*[]byte); ok {
			box, nb = b, *b
		}
	}
	if nb == nil {
		nb = make([]byte, size)
	}
	cn.w = copy(nb, cn.in[:cn.w])
	if len(cn.in) <= keepBuf && size > keepBuf {
		cn.spare = cn.in // without its box (putBig makes one)
	} else if bufClass(len(cn.in)) >= 0 {
		cn.putBig()
	}
	cn.in, cn.box = nb, box
}

// putBig gives the read buffer (of a size class) back to the server's
// pool; the caller replaces it.
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

// step is what process stopped at.
type step int

const (
	stInput     step = iota // no complete command is buffered: read more
	stFull                  // the batch is full: write it, then go on
	stBlocked               // a blocking pop waits (cn.blocked)
	stQuit                  // QUIT: write the batch, then close
	stProtoErr              // the batch ends with a protocol error: write it, then close
	stOverLimit             // the output limit is exceeded: close
)

// process answers the complete commands buffered in in[r:w] into the
// batch, until one of the steps above.
func (cn *conn) process() step {
	s := cn.srv
	now := int64(0) // when the first command started executing
	for !cn.quit {
		args, n, err := cn.p.Next(cn.in[cn.r:cn.w])
		if err != nil {
			cn.releaseBig()
			s.stats.errors.Add(1)
			s.stats.queryLimit.Add(1)
			cn.out.err(err.Error())
			return stProtoErr
		}
		if n == 0 {
			return stInput
		}
		cn.cmdStart = time.Time{}
		if len(args) > 0 {
			if now == 0 {
				now = cn.clock()
				cn.lastCmd.Store(now)
			}
			cn.exec(args)
		}
		cn.bigLast = len(cn.bigs) > 0
		if cn.bigLast {
			cn.dropBigs()
		}
		cn.r += n // after exec: args alias the buffer
		if cn.blocked != nil {
			return stBlocked
		}
		if len(cn.out.buf) > s.cfg.OutputLimit {
			s.stats.outputLimit.Add(1)
			return stOverLimit
		}
		if cn.out.full() {
			return stFull
		}
	}
	return stQuit
}

// makeRoom prepares the read buffer for the next read: it moves the
// partial command to the front, grows the buffer (doubling or more, see
// growSize, up to the limits) when it is full or, up to keepBuf, when the last read filled it,
// and goes back to the small buffer when a large one is drained. It
// reports false (with a protocol error in the batch) when the buffer
// cannot grow, which the parser's limits make unreachable.
func (cn *conn) makeRoom() bool {
	s := cn.srv
	lim := s.cfg.Limits
	maxBuf := lim.MaxCommand + lim.MaxInline
	if cn.r == cn.w && len(cn.in) > keepBuf {
		cn.putBig()
		cn.in, cn.spare, cn.r, cn.w = cn.spare, nil, 0, 0
		if cn.in == nil {
			cn.in = make([]byte, initBuf)
		}
	}
	if cn.r > 0 {
		cn.w = copy(cn.in, cn.in[cn.r:cn.w])
		cn.r = 0
	}
	if cn.w == len(cn.in) || (len(cn.in)-cn.w < min(readChunk, len(cn.in))/4 && len(cn.in) < maxBuf) ||
		(cn.filled && len(cn.in) < min(keepBuf, maxBuf)) {
		if len(cn.in) >= maxBuf {
			s.stats.queryLimit.Add(1)
			cn.out.err("Protocol error: command too large")
			return false
		}
		cn.grow(cn.growSize(maxBuf))
	}
	return true
}

// growSize is the size makeRoom grows the read buffer to: twice its size,
// or, for a connection of an event loop whose buffer is below keepBuf, the
// power of two that holds what is buffered and what the socket holds
// (pendingBytes), up to keepBuf: a new connection's first pipeline of
// large values (16 × 4 KiB) is then taken in one more read instead of one
// per doubling (1, 2, 4 … 64 KiB), each with its copy of the buffer.
// The buffer still grows only with bytes the client has sent, and only
// doubles while a large argument is received (server_bigarg.go: those
// bytes go to the argument's own buffer).
func (cn *conn) growSize(maxBuf int) int {
	n := min(2*len(cn.in), maxBuf)
	if cn.fd < 0 || n >= keepBuf || cn.bigBuf != nil {
		return n // a large argument's body is read into a buffer of its own, not this one
	}
	want := cn.w + pendingBytes(cn.fd)
	for n < want && n < keepBuf {
		n *= 2
	}
	return min(n, maxBuf)
}

// serve serves the connection on cn.c from the calling goroutine: read,
// answer every complete command read, write the batch with one writev.
func (cn *conn) serve() {
	s := cn.srv
	for {
		switch cn.process() {
		case stFull:
			if cn.out.flush(cn.c) != nil {
				return
			}
			continue
		case stBlocked:
			if !cn.resumeBlocked() {
				return
			}
			continue
		case stProtoErr:
			cn.closeAfterError()
			return
		case stOverLimit:
			return
		}
		if cn.out.pending() && cn.out.flush(cn.c) != nil {
			return
		}
		if cn.quit {
			return
		}
		if !cn.makeRoom() {
			cn.closeAfterError()
			return
		}
		big := cn.bigRoom()
		cn.setDeadline()
		var n int
		var err error
		if big != nil {
			n, err = cn.c.Read(big)
			cn.bigRead(n)
		} else {
			n, err = cn.c.Read(cn.readRoom())
			cn.filled = n == len(cn.in)-cn.w
			cn.w += n
		}
		if err != nil && n == 0 {
			if isTimeout(err) {
				if cn.w > 0 {
					s.stats.slowClosed.Add(1)
				} else {
					s.stats.idleClosed.Add(1)
				}
			}
			return
		}
	}
}

// resumeBlocked writes the batch, waits for the blocking pop and answers
// it; false: close the connection.
func (cn *conn) resumeBlocked() bool {
	if cn.out.pending() && cn.out.flush(cn.c) != nil {
		return false
	}
	if !cn.waitBlocked() {
		return false
	}
	cn.deadline = time.Time{}
	return true
}

// setDeadline sets the read deadline: CommandTimeout after the start of a
// command partly received, IdleTimeout after the last command otherwise.
func (cn *conn) setDeadline() {
	dl := cn.nextDeadline()
	if !dl.Equal(cn.deadline) {
		_ = cn.c.SetReadDeadline(dl)
		cn.deadline = dl
	}
}

// nextDeadline is when the connection times out if nothing more arrives
// (zero: never).
func (cn *conn) nextDeadline() time.Time {
	s := cn.srv
	var dl time.Time
	if cn.w > 0 {
		if cn.cmdStart.IsZero() {
			cn.cmdStart = time.Now()
		}
		if s.cfg.CommandTimeout > 0 {
			dl = cn.cmdStart.Add(s.cfg.CommandTimeout)
		}
	} else if idle := s.idle.Load(); idle > 0 {
		dl = time.Now().Add(time.Duration(idle))
	}
	return dl
}

func isTimeout(err error) bool {
	if err == io.EOF {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
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

// serveHanded serves, on the calling goroutine, a connection that an event
// loop handed over at step st (stBlocked or stProtoErr), until it is
// closed.
func (s *Server) serveHanded(cn *conn, st step) {
	defer s.dropConn(cn)
	cn.deadline = time.Time{}
	switch st {
	case stBlocked:
		if cn.resumeBlocked() {
			cn.serve()
		}
	case stProtoErr:
		cn.closeAfterError()
	}
}

// addToLoopLocked hands cn, whose socket is fd, to the next event loop
// (round robin). s.mu is held on entry and released on return. If the
// loop cannot take it, fd is closed and cn dropped.
func (s *Server) addToLoopLocked(cn *conn, fd int) {
	l := s.loops[s.nextLoop%len(s.loops)]
	s.nextLoop++
	err := l.add(cn, fd)
	s.mu.Unlock()
	if err != nil {
		closeFD(fd)
		s.dropConn(cn)
	}
}
