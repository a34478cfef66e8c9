package resp

import (
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// Values received into their final memory (scatter reads). A pipelined
// batch of commands storing values of pooled size (SET k v ×16 of 4 KiB)
// would be read into the connection's buffer and each value then copied
// into a pool buffer by the keyspace. Instead, after commands of one
// layout (the same length on the wire, values of the same lengths at the
// same offsets), an event loop reads the next batch with one readv
// (recvmsg through the ring) whose vectors predict that layout: the bytes
// between values go to the connection's buffer at the places they would
// take in the stream, each value into a pool buffer of its length, and
// what lies past the predicted commands into the rest of the buffer. The
// buffer keeps a gap, of each received value's length, where its bytes
// would be: the stream's offsets are unchanged.
//
// The parser is given the buffer only up to the next gap. When it waits
// for a bulk body at exactly that gap, of exactly that length, the pool
// buffer is handed to it (Parser.SetExternalInPlace) and, as a large
// argument's body, to the keyspace, which keeps it as the stored value
// without a copy (keyspace.take). On anything else (another command,
// another length, a header or value split differently) the layout was
// mispredicted: every value still held is copied into its gap and
// released, and parsing goes on over the plain stream, as without
// scatter. A value the read did not receive whole is copied (the part
// received) into its gap and released at once, so no read ever continues
// into a pool buffer.
//
// Memory: the values held are pool buffers of the lengths that a command
// actually received declared, at most the read's room (the connection's
// buffer, up to keepBuf) in all; they are released or kept by the
// keyspace (counted as every stored value) before the next read.
const (
	// scatterMin is the smallest value received into a buffer of its own
	// (and at least the keyspace's pool threshold); values of bigArg and
	// more take the large-argument path instead.
	scatterMin = 1 << 10
	// maxGaps bounds the values of one command's layout (MSET of 16
	// pairs and fewer; a longer one is not predicted).
	maxGaps = 16
	// maxScatter bounds the values of one read (the room, at most keepBuf,
	// holds at most 128 values of scatterMin).
	maxScatter = 128
	// maxSpares and maxSpareBytes bound a connection's spare value
	// buffers: at most the size of its read buffer again.
	maxSpares     = 64
	maxSpareBytes = keepBuf
)

// gap is a value of a layout: its offset from the start of its command
// and its length.
type gap struct{ off, n int }

// scatter is a connection's layout prediction and the values of its
// scatter read.
type scatter struct {
	// on: the connection is an event loop's and Config.Scatter is set
	// (the layout is learned, reads predicted).
	on bool
	// The layout: the last command's length on the wire (0: none) and its
	// values; seen counts the commands of that layout answered since the
	// last read was prepared (the next read predicts as many).
	cmdLen int
	gaps   [maxGaps]gap
	ngaps  int
	seen   int

	// The values of the read: bufs[i] holds the bytes of in[at[i]:]
	// (bufs[i].Len() of them); bufs[next:] are not yet handed to the
	// parser. segs are the read's vectors while it is under way.
	bufs []mem.Buf
	at   []int
	next int
	segs [][]byte
	// spares are pool buffers for the next read's values: the items of
	// the values that scatter values replaced (keyspace.overwrite), at
	// most maxSpares of spareBytes (values' lengths) up to maxSpareBytes.
	spares     []mem.Buf
	spareBytes int
}

// roomFor reports whether the spares may take a buffer of n bytes.
func (sc *scatter) roomFor(n int) bool {
	return len(sc.spares) < maxSpares && sc.spareBytes+n <= maxSpareBytes
}

// keep adds b to the spares (roomFor checked).
func (sc *scatter) keep(b mem.Buf) {
	sc.spares = append(sc.spares, b)
	sc.spareBytes += b.Len()
}

// scatterPrep prepares the read into room (cn.in[cn.w:], the first
// command buffered starting at in[0], as makeRoom leaves it) as the layout
// predicts: the commands at in[0], in[cmdLen], ..., their values'
// gaps from cn.w on, in cn.sc.segs. It reports false (and prepares
// nothing) when no prediction applies.
func (cn *conn) scatterPrep(room []byte) bool {
	sc := &cn.sc
	k := sc.seen
	sc.seen = 0
	if k == 0 || sc.cmdLen == 0 || cn.r != 0 || len(sc.bufs) != 0 || cn.bigLast ||
		len(room) != len(cn.in)-cn.w || !sc.on {
		return false
	}
	k = min(k, len(cn.in)/sc.cmdLen)
	pool := cn.srv.pool
	segs := sc.segs[:0]
	pos := cn.w
fill:
	for j := range k {
		base := j * sc.cmdLen
		for _, g := range sc.gaps[:sc.ngaps] {
			at := base + g.off
			if at < pos { // received already (the command begun in the buffer)
				continue
			}
			if len(sc.bufs) == maxScatter {
				break fill
			}
			var b mem.Buf
			if ns := len(sc.spares); ns > 0 && sc.spares[ns-1].Len() == g.n {
				b, sc.spares[ns-1] = sc.spares[ns-1], mem.Buf{}
				sc.spares = sc.spares[:ns-1]
				sc.spareBytes -= g.n
			} else {
				var err error
				if b, err = pool.Alloc(g.n); err != nil {
					break fill // the pool is full: predict no further
				}
			}
			segs = append(segs, cn.in[pos:at], b.Bytes())
			sc.bufs = append(sc.bufs, b)
			sc.at = append(sc.at, at)
			pos = at + g.n
		}
	}
	if len(sc.bufs) == 0 {
		sc.segs = segs
		return false
	}
	sc.segs = append(segs, cn.in[pos:]) // not empty: a CRLF at least
	return true
}

// scatterDone takes in the n bytes of the scatter read (0 after an
// error), before the caller adds them to cn.w: values received whole
// stay in their buffers, the others go to their gaps.
func (cn *conn) scatterDone(n int) {
	sc := &cn.sc
	clear(sc.segs)
	sc.segs = sc.segs[:0]
	end := cn.w + n
	for i, at := range sc.at {
		if at+sc.bufs[i].Len() <= end {
			continue
		}
		// Values are in stream order: this one and the rest were not
		// received whole.
		if at < end {
			copy(cn.in[at:end], sc.bufs[i].Bytes())
		}
		cn.scatterRelease(i)
		break
	}
}

// scatterRelease releases the values from the i-th on.
func (cn *conn) scatterRelease(i int) {
	sc := &cn.sc
	for j := i; j < len(sc.bufs); j++ {
		_ = sc.bufs[j].Release()
		sc.bufs[j] = mem.Buf{}
	}
	sc.bufs, sc.at = sc.bufs[:i], sc.at[:i]
	if sc.next >= len(sc.bufs) {
		sc.bufs, sc.at, sc.next = sc.bufs[:0], sc.at[:0], 0
	}
}

// parseEnd is where the parser's view of the buffer ends: the next
// value's gap while values are held, else the end of the input.
func (cn *conn) parseEnd() int {
	if sc := &cn.sc; sc.next < len(sc.bufs) {
		return sc.at[sc.next]
	}
	return cn.w
}

// scatterHand is called when the parser needs input past parseEnd: it
// hands the next value over when the parser waits for exactly it, and
// otherwise puts every value held into its gap (mispredicted). It reports
// false when no value was held (the parser needs more input).
func (cn *conn) scatterHand() bool {
	sc := &cn.sc
	if sc.next >= len(sc.bufs) {
		return false
	}
	b := sc.bufs[sc.next]
	if pos, l, ok := cn.p.PendingBulk(); ok && cn.r+pos == sc.at[sc.next] && l == b.Len() {
		cn.p.SetExternalInPlace(b.Bytes())
		cn.bigs = append(cn.bigs, b)
		cn.srv.stats.scattered.Add(1)
		sc.bufs[sc.next] = mem.Buf{}
		sc.next++
		if sc.next == len(sc.bufs) {
			sc.bufs, sc.at, sc.next = sc.bufs[:0], sc.at[:0], 0
		}
		return true
	}
	for i := sc.next; i < len(sc.bufs); i++ {
		copy(cn.in[sc.at[i]:], sc.bufs[i].Bytes())
	}
	cn.srv.stats.mispredicted.Add(uint64(len(sc.bufs) - sc.next))
	cn.scatterRelease(sc.next)
	return true
}

// scatterLearn records the layout of the command args just parsed (n
// bytes at in[r:]), or counts it when it has the layout predicted.
// Commands with no value of scatter size leave the layout as it is.
func (cn *conn) scatterLearn(args [][]byte, n int) {
	sc := &cn.sc
	if len(cn.bigs) > 0 { // values received elsewhere (scatter values, large arguments)
		if n == sc.cmdLen {
			sc.seen++
		}
		return
	}
	s := cn.srv
	lo := max(s.ks.storeMin, scatterMin)
	if s.pool == nil || s.ks.storeMin <= 0 || n >= len(cn.in) {
		return
	}
	var gs [maxGaps]gap
	ng := 0
	base := uintptr(unsafe.Pointer(unsafe.SliceData(cn.in))) + uintptr(cn.r)
	for _, a := range args {
		if len(a) < lo || len(a) >= bigArg {
			continue
		}
		off := int(uintptr(unsafe.Pointer(unsafe.SliceData(a))) - base)
		if off <= 0 || off+len(a) > n { // not in the buffer: unreachable (bigs empty)
			return
		}
		if ng == maxGaps {
			return
		}
		gs[ng] = gap{off, len(a)}
		ng++
	}
	if ng == 0 {
		return
	}
	if sc.cmdLen == n && sc.ngaps == ng && sc.gaps == gs {
		sc.seen++
		return
	}
	sc.cmdLen, sc.gaps, sc.ngaps, sc.seen = n, gs, ng, 1
	cn.dropSpares() // of the old layout's lengths
}

// dropSpares releases the spare value buffers.
func (cn *conn) dropSpares() {
	for i, b := range cn.sc.spares {
		_ = b.Release()
		cn.sc.spares[i] = mem.Buf{}
	}
	cn.sc.spares, cn.sc.spareBytes = cn.sc.spares[:0], 0
}
