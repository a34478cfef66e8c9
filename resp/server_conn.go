package resp

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"
)

func (s *Server) newConn(c net.Conn) *conn {
	now := time.Now()
	cn := &conn{srv: s, c: c, in: make([]byte, initBuf), id: s.nextID.Add(1), created: now}
	cn.lastCmd.Store(now.UnixNano())
	cn.p.Limits = s.cfg.Limits
	cn.out.proto = 2
	cn.pubProto.Store(2)
	if u := s.users["default"]; u.nopass {
		cn.user = u
	}
	return cn
}

func (s *Server) serveConn(cn *conn) {
	defer func() {
		s.mu.Lock()
		delete(s.clients, cn.c)
		s.mu.Unlock()
		_ = cn.c.Close()
		s.kmu.Lock()
		cn.unwatchAll()
		s.kmu.Unlock()
		s.wg.Done()
	}()
	defer cn.out.release()
	defer func() {
		if len(cn.in) > keepBuf {
			cn.putBig()
		}
	}()
	cn.serve()
}

// conn is one connection's state, owned by its goroutine (the fields
// about the keyspace — watched keys, dirtyCAS — are guarded by the
// keyspace lock; the pub* fields are what CLIENT LIST of another
// connection reads).
type conn struct {
	srv  *Server
	c    net.Conn
	p    Parser
	in   []byte // read buffer: in[r:w] is unconsumed
	r, w int
	out  output
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

	id       int64
	created  time.Time
	dbi      int
	name     string
	user     *user // nil: not authenticated
	inMulti  bool
	multiErr bool
	inExec   bool
	queue    [][][]byte
	watched  []blockKey
	dirtyCAS bool

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
		u := cn.user.Name
		cn.pubUser.Store(&u)
	}
	cn.pubDB.Store(int32(cn.dbi))
	cn.pubProto.Store(int32(cn.out.proto))
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
	s := cn.srv
	lim := s.cfg.Limits
	maxBuf := lim.MaxCommand + lim.MaxInline
	for {
		// Answer every complete command buffered.
		for !cn.quit {
			args, n, err := cn.p.Next(cn.in[cn.r:cn.w])
			if err != nil {
				s.stats.errors.Add(1)
				s.stats.queryLimit.Add(1)
				cn.out.err(err.Error())
				cn.closeAfterError()
				return
			}
			if n == 0 {
				break
			}
			cn.cmdStart = time.Time{}
			if len(args) > 0 {
				cn.lastCmd.Store(time.Now().UnixNano())
				cn.exec(args)
			}
			cn.r += n // after exec: args alias the buffer
			if cn.blocked != nil {
				if cn.out.pending() && cn.out.flush(cn.c) != nil {
					return
				}
				if !cn.waitBlocked() {
					return
				}
				cn.deadline = time.Time{}
			}
			if len(cn.out.buf) > s.cfg.OutputLimit {
				s.stats.outputLimit.Add(1)
				return
			}
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
				// Unreachable: the parser's limits keep a command within maxBuf.
				s.stats.queryLimit.Add(1)
				cn.out.err("Protocol error: command too large")
				cn.closeAfterError()
				return
			}
			cn.grow(min(2*len(cn.in), maxBuf))
		}
		cn.setDeadline()
		n, err := cn.c.Read(cn.in[cn.w:])
		cn.filled = n == len(cn.in)-cn.w
		cn.w += n
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

// setDeadline sets the read deadline: CommandTimeout after the start of a
// command partly received, IdleTimeout after the last command otherwise.
func (cn *conn) setDeadline() {
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
	if !dl.Equal(cn.deadline) {
		_ = cn.c.SetReadDeadline(dl)
		cn.deadline = dl
	}
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
