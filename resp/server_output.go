package resp

import (
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/cornflakes-go/cornflakes/mem"
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
	proto int         // 2 or 3 (HELLO)
	// An event loop's write under way (writeFD): iov[ipos:] is what is
	// left to write.
	writing bool
	ipos    int
	sys     outputSys
}

// abort abandons the batch, written or not (the connection is closed).
func (o *output) abort() { o.done() }

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

// iovecs returns the batch as iovecs (in o.iov, kept for its capacity):
// copied bytes and zero-copy values in order.
func (o *output) iovecs() net.Buffers {
	iov := o.iov[:0]
	last := 0
	for i, b := range o.zc {
		if m := o.marks[i]; m > last {
			iov = append(iov, o.buf[last:m])
			last = m
		}
		if b.Len() > 0 {
			iov = append(iov, b.Bytes())
		}
	}
	if last < len(o.buf) {
		iov = append(iov, o.buf[last:])
	}
	o.iov = iov
	return iov
}

// flush writes the batch and releases its references, whether or not the
// write succeeded.
func (o *output) flush(w io.Writer) error {
	iov := o.iovecs()
	var err error
	if len(iov) == 1 {
		_, err = w.Write(iov[0])
	} else if len(iov) > 1 {
		o.wv = iov
		_, err = o.wv.WriteTo(w) // writev on a *net.TCPConn
		o.wv = nil
	}
	o.done()
	return err
}

// done ends a batch that is written (or abandoned): it drops the iovecs,
// releases the references and empties the buffer.
func (o *output) done() {
	clear(o.iov[:cap(o.iov)]) // drop the slices into registered memory
	o.iov, o.ipos, o.writing = o.iov[:0], 0, false
	o.release()
	if cap(o.buf) > 4*flushBytes {
		o.buf = nil
	}
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
	for _, c := range []string{"WRONGTYPE ", "NOPROTO ", "NOAUTH ", "WRONGPASS ", "NOPERM ", "OOM ", "EXECABORT ", "DENIED "} {
		if strings.HasPrefix(s, c) {
			return true
		}
	}
	return false
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

// null is a nil bulk string (RESP3: null).
func (o *output) null() {
	if o.proto == 3 {
		o.buf = append(o.buf, "_\r\n"...)
		return
	}
	o.buf = append(o.buf, "$-1\r\n"...)
}

// nullArray is a nil array (RESP3: null).
func (o *output) nullArray() {
	if o.proto == 3 {
		o.buf = append(o.buf, "_\r\n"...)
		return
	}
	o.buf = append(o.buf, "*-1\r\n"...)
}

// mapHeader starts a map of n pairs (RESP2: an array of 2n elements).
func (o *output) mapHeader(n int) {
	if o.proto == 3 {
		o.buf = append(o.buf, '%')
		o.buf = appendInt(o.buf, int64(n))
		o.buf = append(o.buf, '\r', '\n')
		return
	}
	o.arrayHeader(2 * n)
}

// setHeader starts a set of n elements (RESP2: an array).
func (o *output) setHeader(n int) {
	if o.proto == 3 {
		o.buf = append(o.buf, '~')
		o.buf = appendInt(o.buf, int64(n))
		o.buf = append(o.buf, '\r', '\n')
		return
	}
	o.arrayHeader(n)
}

func (o *output) bulk(b []byte) {
	o.buf = slices.Grow(o.buf, len(b)+bulkFraming)
	o.bulkHeader(len(b))
	o.buf = append(o.buf, b...)
	o.buf = append(o.buf, '\r', '\n')
}

// bulkFraming is the most bytes of a bulk string's framing: "$", 20
// digits, two CRLFs.
const bulkFraming = 1 + 20 + 4

func (o *output) bulkString(s string) {
	o.bulkHeader(len(s))
	o.buf = append(o.buf, s...)
	o.buf = append(o.buf, '\r', '\n')
}

func (o *output) bulkHeader(n int) {
	if n >= 0 && n < 1000 { // the common short value: no strconv
		switch {
		case n < 10:
			o.buf = append(o.buf, '$', byte('0'+n), '\r', '\n')
		case n < 100:
			o.buf = append(o.buf, '$', byte('0'+n/10), byte('0'+n%10), '\r', '\n')
		default:
			o.buf = append(o.buf, '$', byte('0'+n/100), byte('0'+n/10%10), byte('0'+n%10), '\r', '\n')
		}
		return
	}
	o.buf = append(o.buf, '$')
	o.buf = appendInt(o.buf, int64(n))
	o.buf = append(o.buf, '\r', '\n')
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
