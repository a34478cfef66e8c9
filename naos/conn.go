package naos

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
	"golang.org/x/sys/unix"
)

// Options configure a Conn (and Encode/Decode). The zero value sends with
// neither sharing detection nor compaction, as Naos does by default.
type Options struct {
	// Sharing turns on the detection of shared and cyclic pointers: a
	// pointer to an object already sent is sent as its address only, and
	// the receiver rebuilds the same sharing and cycles. Without it a
	// shared object arrives as two copies and a cycle fails with an error
	// once the message exceeds Limits.MaxBytes.
	Sharing bool
	// Compact sends every slice of pointers as NaosIt does: a bitmap of its
	// non-nil elements and the objects, without the pointer array. It is
	// ignored when Sharing is on.
	Compact bool
	// Chunk, if positive, pipelines sends: the traversal hands the send
	// list to a writer goroutine every Chunk bytes and goes on while the
	// chunk is written. Zero sends the whole list after the traversal.
	Chunk int
	// ReadBuffer is the receive buffer size. By default it is
	// DefaultReadBuffer and grows, once, up to MaxReadBuffer when a larger
	// message arrives; a positive ReadBuffer is used as it is. Reads of
	// pointer-free ranges of 4 KiB or more bypass it.
	ReadBuffer int
	// Stage is the size up to which a range of the send list that does not
	// coalesce with the previous one is copied into a staging buffer (one
	// iovec for many small objects in traversal order), on the stream path
	// and when a message is built in memory (AppendEncode, EncodeBuf, the
	// RPC path): 0 means DefaultStage, negative turns staging off. Larger
	// ranges are sent (or copied) from their own memory. The packed
	// objects of arrays of pointers to flat objects (docs/NAOS.md) are
	// written into staging buffers whatever Stage is; their strings
	// longer than Stage (all of them when it is negative) are sent from
	// their own memory.
	Stage int
	// Limits bound what a receiver allocates per message.
	Limits Limits

	asIs bool // tests: flat objects as they are in memory (no flagDense), as earlier senders did
}

// Conn sends and receives Go values over a stream socket (TCP or Unix).
//
// One goroutine may send while another receives. Send, SendAsync and Recv
// are each safe for concurrent use; messages leave in the order their
// Send or SendAsync calls were made. Close closes the socket and waits
// for pending asynchronous sends to fail or finish.
type Conn struct {
	c    net.Conn
	raw  syscall.RawConn
	opts Options

	sendMu sync.Mutex // one message on the wire at a time
	enc    encoder
	wr     *writer
	root   reflect.Value // the root's copy for values of type rootT, zeroed between sends
	rootT  reflect.Type

	asyncMu sync.Mutex
	queue   chan *Handle // asynchronous sends, in order; nil until the first
	pending atomic.Int64 // asynchronous sends queued or running
	wg      sync.WaitGroup
	closed  bool

	recvMu sync.Mutex
	rd     reader
	dec    decoder
}

// NewConn wraps c, which must be a *net.TCPConn or *net.UnixConn (writev
// needs its file descriptor). The Conn owns c from now on.
func NewConn(c net.Conn, opts Options) (*Conn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("naos: %T has no file descriptor (want *net.TCPConn or *net.UnixConn)", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("naos: %w", err)
	}
	grow := opts.ReadBuffer
	if opts.ReadBuffer <= 0 {
		opts.ReadBuffer, grow = DefaultReadBuffer, MaxReadBuffer
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.Sharing {
		opts.Compact = false
	}
	k := &Conn{c: c, raw: raw, opts: opts}
	k.rd = reader{rd: c, buf: make([]byte, opts.ReadBuffer), grow: grow}
	k.dec = decoder{r: &k.rd, lim: opts.Limits}
	k.enc = newEncoder(opts, true)
	k.wr = newWriter()
	return k, nil
}

func newEncoder(opts Options, coalesce bool) encoder {
	lim := opts.Limits.withDefaults()
	e := encoder{sharing: opts.Sharing, compact: opts.Compact && !opts.Sharing, coalesce: coalesce, dense: !opts.asIs, maxBytes: lim.MaxBytes}
	if e.sharing {
		e.seen = map[seenKey]struct{}{}
	}
	if opts.Stage >= 0 {
		e.st.max = DefaultStage
		if opts.Stage > 0 {
			e.st.max = uintptr(min(opts.Stage, stageBlock))
		}
	}
	return e
}

// NetConn returns the underlying connection.
func (k *Conn) NetConn() net.Conn { return k.c }

// Close closes the connection; pending asynchronous sends fail.
func (k *Conn) Close() error {
	err := k.c.Close() // first: unblocks a send stalled on the peer
	k.asyncMu.Lock()
	if !k.closed {
		k.closed = true
		if k.queue != nil {
			close(k.queue)
		}
	} else {
		err = nil
	}
	k.asyncMu.Unlock()
	k.wg.Wait()
	return err
}

// ErrClosed is returned by sends on a closed Conn.
var ErrClosed = errs.New("naos: connection closed", cornflakes.ErrClosed)

// Send sends v and everything reachable from it, from the memory where it
// lives, and returns once the kernel has taken all of it. v must not be
// modified until Send returns (see the package documentation).
func (k *Conn) Send(v any) error {
	k.asyncMu.Lock()
	if k.closed {
		k.asyncMu.Unlock()
		return ErrClosed
	}
	if k.inflight() {
		k.asyncMu.Unlock()
		return k.SendAsync(v).Wait() // keep the order of earlier asynchronous sends
	}
	k.sendMu.Lock() // under asyncMu: no asynchronous send can start before this one
	k.asyncMu.Unlock()
	defer k.sendMu.Unlock()
	return k.send(v)
}

// send writes one message; sendMu is held.
func (k *Conn) send(v any) error {
	if v == nil {
		return errors.New("naos: Send(nil)")
	}
	rv := reflect.ValueOf(v)
	p, err := planOf(rv.Type())
	if err != nil {
		return err
	}
	// The root's own copy (an interface's storage is not addressable),
	// kept for the next value of the same type and zeroed after the send.
	if k.rootT != rv.Type() {
		k.root, k.rootT = reflect.New(rv.Type()), rv.Type()
	}
	root := k.root
	root.Elem().Set(rv)
	defer root.Elem().SetZero()
	e := &k.enc
	defer e.reset()
	if k.opts.Chunk > 0 {
		return k.sendPipelined(root, p)
	}
	e.iov = append(e.iov, iovec{}) // the header's entry, filled in below
	if err := e.traverse(root.UnsafePointer(), p); err != nil {
		return err
	}
	h := e.header(p, uint64(e.total))
	e.iov[0] = iovec{unsafe.Pointer(&h[0]), uintptr(len(h))}
	err = k.writev(e.iov)
	runtime.KeepAlive(root)
	runtime.KeepAlive(v)
	return err
}

// sendPipelined overlaps the traversal with writing: every Chunk bytes the
// send list goes to a writer goroutine, and the traversal continues into a
// second list.
func (k *Conn) sendPipelined(root reflect.Value, p *plan) error {
	e := &k.enc
	work := make(chan []iovec, 1)
	free := make(chan []iovec, 2)
	free <- make([]iovec, 0, 256)
	done := make(chan error, 1)
	w := newWriter()
	go func() {
		var werr error
		for l := range work {
			if werr == nil {
				werr = k.writevWith(l, w)
			}
			clear(l)
			free <- l[:0]
		}
		done <- werr
	}()
	var failed error
	e.chunk = int64(k.opts.Chunk)
	e.flush = func(l []iovec) ([]iovec, error) {
		work <- l
		n := <-free
		select {
		case err := <-done: // the writer failed and stopped
			failed = err
			return n, err
		default:
		}
		return n, nil
	}
	h := e.header(p, streamedLen)
	e.iov = append(e.iov, iovec{unsafe.Pointer(&h[0]), uintptr(len(h))})
	err := e.traverse(root.UnsafePointer(), p)
	e.chunk, e.flush = 0, nil
	if failed != nil {
		return failed
	}
	if err == nil && len(e.iov) > 0 {
		work <- e.iov
		e.iov = <-free
	}
	close(work)
	werr := <-done
	runtime.KeepAlive(root)
	if err != nil {
		// The message is cut short: the peer sees a truncated stream.
		_ = k.c.Close()
		return err
	}
	return werr
}

// writev writes the send list with writev, IOV_MAX entries per call,
// resuming after partial writes.
func (k *Conn) writev(l []iovec) error { return k.writevWith(l, k.wr) }

// writer is the state of one writev loop, with the function handed to
// RawConn.Write bound once (a closure per call would allocate).
type writer struct {
	vs    []rawIovec
	wrote uintptr
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

func newWriter() *writer {
	w := &writer{}
	w.fn = w.write
	return w
}

// write is one writev of w.vs on fd; false means the socket is full (the
// poller waits and calls again).
func (w *writer) write(fd uintptr) bool {
	for {
		r, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.vs[0])), uintptr(len(w.vs)))
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		w.wrote, w.errno = r, e
		return true
	}
}

func (k *Conn) writevWith(l []iovec, w *writer) error {
	const iovMax = 1024
	var skip uintptr // bytes of l[0] already written
	for len(l) > 0 {
		n := min(len(l), iovMax)
		vs := w.vs[:0]
		for i, v := range l[:n] {
			// Bases are the addresses of live heap objects (kept alive by l);
			// the collector does not move heap objects.
			b := uintptr(v.base)
			ln := v.n
			if i == 0 {
				b += skip
				ln -= skip
			}
			vs = append(vs, rawIovec{b, ln})
		}
		w.vs = vs
		w.wrote, w.errno = 0, 0
		err := k.raw.Write(w.fn)
		wrote, errno := w.wrote, w.errno
		runtime.KeepAlive(l)
		if err != nil {
			return fmt.Errorf("naos: writev: %w", err)
		}
		if errno != 0 {
			return fmt.Errorf("naos: writev: %w", errno)
		}
		// Advance past what was written.
		for wrote > 0 && len(l) > 0 {
			rem := l[0].n - skip
			if wrote < rem {
				skip += wrote
				wrote = 0
				break
			}
			wrote -= rem
			skip = 0
			l = l[1:]
		}
	}
	return nil
}

// rawIovec is struct iovec with the base as an integer: a coalesced range
// may span several heap objects, which no Go pointer may do.
type rawIovec struct{ base, n uintptr }

// inflight reports whether asynchronous sends are queued or running.
// asyncMu is held.
func (k *Conn) inflight() bool { return k.pending.Load() > 0 }
