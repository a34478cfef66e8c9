package naos

import (
	"errors"
	"io"
)

// reader is the receiver's view of the bytes of messages: a stream with a
// read buffer (small objects come out of the buffer; large pointer-free
// ranges are read straight into their destination) or one message held in
// memory.
type reader struct {
	rd    io.Reader // nil: buf is the whole input
	buf   []byte
	r, w  int
	count int64 // data bytes of the current message read so far
	limit int64 // data bytes the current message may use
	grow  int   // a stream's buffer grows up to this size for large messages
}

// DefaultReadBuffer and MaxReadBuffer are a Conn's receive buffer sizes
// when Options.ReadBuffer is not set: it starts at the first and grows,
// once, up to the second for a message whose data is larger (fewer read
// calls for large messages of small objects).
const (
	DefaultReadBuffer = 64 << 10
	MaxReadBuffer     = 256 << 10
)

// fit grows a stream's read buffer toward a message of n data bytes
// (streamedLen: unknown), within r.grow; unread bytes are kept.
func (r *reader) fit(n uint64) {
	if r.rd == nil || len(r.buf) >= r.grow || n <= uint64(len(r.buf)) {
		return
	}
	b := make([]byte, min(n, uint64(r.grow)))
	r.w = copy(b, r.buf[r.r:r.w])
	r.r = 0
	r.buf = b
}

// directMin is the smallest read that bypasses the buffer once it is
// empty.
const directMin = 4096

// header reads the start of a message: io.EOF if the input ends cleanly
// before it.
func (r *reader) header(p []byte) error {
	if r.r == r.w && r.rd != nil {
		if err := r.fill(1); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return io.EOF
			}
			return err
		}
	} else if r.r == r.w {
		return io.EOF
	}
	r.count = 0
	r.limit = int64(len(p)) + maxNameLen
	return r.full(p)
}

// full fills p, counting against the message's limit.
func (r *reader) full(p []byte) error {
	if int64(len(p)) > r.limit-r.count {
		return formatErr("message needs more than the %d bytes it may use", r.limit)
	}
	r.count += int64(len(p))
	k := copy(p, r.buf[r.r:r.w])
	r.r += k
	p = p[k:]
	if len(p) == 0 {
		return nil
	}
	if r.rd == nil {
		return formatErr("message truncated")
	}
	if len(p) >= directMin || len(p) >= len(r.buf) {
		_, err := io.ReadFull(r.rd, p)
		return truncated(err)
	}
	if err := r.fill(len(p)); err != nil {
		return err
	}
	k = copy(p, r.buf[r.r:r.w])
	r.r += k
	return nil
}

// fill reads at least n bytes into the empty buffer.
func (r *reader) fill(n int) error {
	r.r, r.w = 0, 0
	m, err := io.ReadAtLeast(r.rd, r.buf, n)
	r.w = m
	return truncated(err)
}

func truncated(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// skip discards n bytes of the stream.
func (r *reader) skip(n int64, buf func(int) []byte) error {
	r.count, r.limit = 0, n
	for n > 0 {
		k := int(min(n, 64<<10))
		if err := r.full(buf(k)); err != nil {
			return err
		}
		n -= int64(k)
	}
	return nil
}
