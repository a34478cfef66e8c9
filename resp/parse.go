package resp

import (
	"bytes"
	"errors"
	"strconv"
)

// Default limits of the request parser (Limits). Every size a client
// declares is checked against them before it is used, and none of them
// makes the parser allocate: buffers grow only with bytes actually received.
const (
	// DefaultMaxBulk is the largest bulk string (one argument) accepted:
	// the key-value store's largest value (kv.MaxValueSize, 1 MiB).
	DefaultMaxBulk = 1 << 20
	// DefaultMaxArgs is the most arguments of one command: an MSET of
	// kv.MaxKeys (4096) pairs plus its name.
	DefaultMaxArgs = 2*4096 + 1
	// DefaultMaxInline is the longest inline command line and the longest
	// "*<count>" or "$<length>" header line, as Redis's PROTO_INLINE_MAX_SIZE.
	DefaultMaxInline = 64 << 10
	// DefaultMaxCommand is the most bytes one command may occupy on the
	// wire, and so the most a connection buffers.
	DefaultMaxCommand = 8 << 20
)

// Limits bounds what the parser accepts. A zero field takes its default.
type Limits struct {
	MaxBulk    int // bytes of one bulk string
	MaxArgs    int // arguments of one command (multibulk count)
	MaxInline  int // bytes of an inline command or header line
	MaxCommand int // bytes of one whole command, as received
}

func (l Limits) withDefaults() Limits {
	if l.MaxBulk <= 0 {
		l.MaxBulk = DefaultMaxBulk
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = DefaultMaxArgs
	}
	if l.MaxInline <= 0 {
		l.MaxInline = DefaultMaxInline
	}
	if l.MaxCommand <= 0 {
		l.MaxCommand = DefaultMaxCommand
	}
	return l
}

// ProtocolError is malformed or oversized input. The server answers it with
// "-ERR Protocol error: <Msg>" and closes the connection.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

func protoErr(msg string) error { return &ProtocolError{msg} }

// span is one argument: offsets relative to the start of its command, or,
// when start is negative, the external body ext[-1-start] (SetExternal).
type span struct{ start, end int }

// Parser parses RESP2 requests incrementally: arrays of bulk strings
// ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", what clients send) and inline
// commands ("GET k\r\n", what a person at telnet types; arguments are
// separated by spaces and tabs, quotes are not interpreted).
//
// Next is given the connection's unconsumed bytes, always starting at the
// first byte of the command being parsed. When the command is incomplete
// it returns n == 0 and remembers how far it got, so the next call (with the
// same bytes plus more) resumes there; a pipelined buffer holding many
// commands is consumed by calling Next until it returns 0.
//
// The zero Parser uses the default limits; set Limits before the first call.
type Parser struct {
	Limits Limits

	lim   Limits
	init  bool
	pos   int  // bytes of the current command parsed so far
	multi bool // inside a multibulk command
	want  int  // its declared argument count
	bulk  int  // declared length of the bulk being read, -1 if none
	spans []span
	args  [][]byte
	// ext are the bodies given by SetExternal (extBody: the one of the
	// bulk being read, not yet terminated), extBytes their total length.
	ext      [][]byte
	extBody  []byte
	extBytes int
	// general: (tests) every command takes next's general path, never
	// whole.
	general bool
}

// Reset forgets a partially parsed command (for a new connection).
func (p *Parser) Reset() {
	p.pos, p.multi, p.want, p.bulk = 0, false, 0, -1
	p.spans = p.spans[:0]
	clear(p.ext)
	p.ext, p.extBody, p.extBytes = p.ext[:0], nil, 0
}

// PendingBulk reports the bulk string whose body the parser waits for, when
// its header has been parsed and no external body has been given for it:
// the offset of its body from the start of the command (in the buffer
// given to Next) and its declared length. A caller may then receive the
// body elsewhere and hand it over with SetExternal.
func (p *Parser) PendingBulk() (pos, length int, ok bool) {
	if !p.multi || p.bulk < 0 || p.extBody != nil {
		return 0, 0, false
	}
	return p.pos, p.bulk, true
}

// SetExternal gives the parser the whole body of the pending bulk
// (PendingBulk), received outside the connection's buffer: the buffer
// given to Next is then expected to hold, at the body's offset, only the
// CRLF that ends it. The argument Next returns for it is body itself
// (the caller keeps it valid until the command is consumed). It panics
// when no bulk is pending or the length differs.
func (p *Parser) SetExternal(body []byte) {
	if _, l, ok := p.PendingBulk(); !ok || l != len(body) {
		panic("resp: SetExternal without a pending bulk of that length")
	}
	p.extBody = body
}

// Next parses the command at the start of buf. It returns the command's
// arguments (aliasing buf: valid until buf is modified) and the bytes it
// occupied; n == 0 with a nil error means more input is needed. An empty
// command (a blank inline line, "*0\r\n", "*-1\r\n") returns n > 0 and no
// arguments. After an error the connection must be closed; the parser is
// left reset.
func (p *Parser) Next(buf []byte) (args [][]byte, n int, err error) {
	if !p.init {
		p.lim = p.Limits.withDefaults()
		p.init = true
		p.bulk = -1
	}
	if !p.multi && len(buf) > 0 && buf[0] == '*' && !p.general {
		if args, n, ok := p.whole(buf); ok {
			return args, n, nil
		}
	}
	args, n, err = p.next(buf)
	if err != nil || n > 0 {
		p.Reset()
	}
	return args, n, err
}

func (p *Parser) next(buf []byte) ([][]byte, int, error) {
	if !p.multi {
		if len(buf) == 0 {
			return nil, 0, nil
		}
		if buf[0] != '*' {
			return p.inline(buf)
		}
		c, line, ok := p.count(buf, 1)
		if !ok {
			var err error
			line, ok, err = p.line(buf, 1, "too big mbulk count string")
			if !ok || err != nil {
				return nil, 0, err
			}
			c, ok = parseInt(buf[1:line])
		}
		if !ok || c > int64(p.lim.MaxArgs) {
			return nil, 0, protoErr("invalid multibulk length")
		}
		if c <= 0 {
			return nil, line + 2, nil
		}
		p.multi, p.want, p.pos = true, int(c), line+2
	}
	for len(p.spans) < p.want {
		if p.bulk < 0 {
			if p.pos >= len(buf) {
				return nil, 0, nil
			}
			if buf[p.pos] != '$' {
				return nil, 0, protoErr("expected '$', got '" + printable(buf[p.pos]) + "'")
			}
			l, line, ok := p.count(buf, p.pos+1)
			if !ok {
				var err error
				line, ok, err = p.line(buf, p.pos+1, "too big bulk count string")
				if !ok || err != nil {
					return nil, 0, err
				}
				l, ok = parseInt(buf[p.pos+1 : line])
			}
			if !ok || l < 0 || l > int64(p.lim.MaxBulk) {
				return nil, 0, protoErr("invalid bulk length")
			}
			if p.extBytes+line+2+int(l)+2 > p.lim.MaxCommand {
				return nil, 0, protoErr("command too large")
			}
			p.bulk, p.pos = int(l), line+2
		}
		end := p.pos + p.bulk
		if p.extBody != nil {
			end = p.pos
		}
		if end+2 > len(buf) {
			return nil, 0, nil
		}
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return nil, 0, protoErr("bulk string not terminated by CRLF")
		}
		if p.extBody != nil {
			p.spans = append(p.spans, span{-1 - len(p.ext), 0})
			p.ext = append(p.ext, p.extBody)
			p.extBytes += len(p.extBody)
			p.extBody = nil
		} else {
			p.spans = append(p.spans, span{p.pos, end})
		}
		p.pos, p.bulk = end+2, -1
	}
	p.args = p.args[:0]
	for _, s := range p.spans {
		if s.start < 0 {
			e := p.ext[-1-s.start]
			p.args = append(p.args, e[:len(e):len(e)])
			continue
		}
		p.args = append(p.args, buf[s.start:s.end:s.end])
	}
	return p.args, p.pos, nil
}

// whole parses, in one pass and keeping no state, a multibulk command
// that is all in buf and within every limit, the common case of a
// pipelined buffer: its arguments (as next returns them) and length, ok.
// ok is false for anything else (incomplete, malformed, an empty
// command, a number count does not take, a limit reached): next then
// parses the command from its start and gives the same arguments or the
// error, so the two paths differ only in cost. The parser must be
// between commands (not p.multi).
func (p *Parser) whole(buf []byte) (args [][]byte, n int, ok bool) {
	c, cr, ok := p.count(buf, 1)
	if !ok || c <= 0 || c > int64(p.lim.MaxArgs) {
		return nil, 0, false
	}
	// A bulk's length: 1 to maxDigits digits (fewer than count takes, so
	// that whole never accepts a header next would refuse), then CRLF.
	maxDigits := min(9, p.lim.MaxInline-1)
	args = p.args[:0]
	pos := cr + 2
	for range c {
		if pos >= len(buf) || buf[pos] != '$' {
			return nil, 0, false
		}
		l, i := 0, pos+1
		for lim := min(len(buf), i+maxDigits+1); i < lim; i++ {
			d := buf[i] - '0'
			if d > 9 {
				break
			}
			l = l*10 + int(d)
		}
		if digits := i - pos - 1; digits == 0 || digits > maxDigits || i+1 >= len(buf) || buf[i] != '\r' || buf[i+1] != '\n' || l > p.lim.MaxBulk {
			return nil, 0, false
		}
		start := i + 2
		end := start + l
		if end+2 > len(buf) || end+2 > p.lim.MaxCommand || buf[end] != '\r' || buf[end+1] != '\n' {
			return nil, 0, false
		}
		args = append(args, buf[start:end:end])
		pos = end + 2
	}
	p.args = args
	return args, pos, true
}

// count is the common case of a header line's number, in one pass: 1 to
// 18 decimal digits at from, then CRLF, all in buf and within MaxInline.
// It returns the number and the index of the CR; ok false means the line
// is something else (a sign, no digit, too long, malformed or incomplete),
// which line and parseInt then take as before: the two agree on every
// line count accepts.
func (p *Parser) count(buf []byte, from int) (v int64, cr int, ok bool) {
	end := min(len(buf), from+18)
	i := from
	for ; i < end; i++ {
		c := buf[i]
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	if i == from || i+1 >= len(buf) || buf[i] != '\r' || buf[i+1] != '\n' || i-from >= p.lim.MaxInline {
		return 0, 0, false
	}
	return v, i, true
}

// line finds the CRLF ending the header line that starts before from: its
// index, or ok == false when it has not arrived (an error once more than
// MaxInline bytes arrived without it).
func (p *Parser) line(buf []byte, from int, tooBig string) (int, bool, error) {
	lim := min(len(buf), from+p.lim.MaxInline)
	i := bytes.IndexByte(buf[from:lim], '\r')
	if i < 0 {
		if len(buf)-from >= p.lim.MaxInline {
			return 0, false, protoErr(tooBig)
		}
		return 0, false, nil
	}
	i += from
	if i+1 >= len(buf) {
		return 0, false, nil
	}
	if buf[i+1] != '\n' {
		return 0, false, protoErr("header line not terminated by CRLF")
	}
	return i, true, nil
}

// inline parses a command line: arguments separated by spaces or tabs,
// ended by LF (a CR before it is dropped).
func (p *Parser) inline(buf []byte) ([][]byte, int, error) {
	lim := min(len(buf), p.lim.MaxInline)
	i := bytes.IndexByte(buf[:lim], '\n')
	if i < 0 {
		if len(buf) >= p.lim.MaxInline {
			return nil, 0, protoErr("too big inline request")
		}
		return nil, 0, nil
	}
	line := buf[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	p.args = p.args[:0]
	for len(line) > 0 {
		j := 0
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		line = line[j:]
		j = 0
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if j > 0 {
			if len(p.args) == p.lim.MaxArgs {
				return nil, 0, protoErr("too many arguments in inline request")
			}
			p.args = append(p.args, line[:j:j])
		}
		line = line[j:]
	}
	return p.args, i + 1, nil
}

// parseInt parses a decimal integer of at most 18 digits with an optional
// minus sign: no spaces, no plus, no overflow.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func printable(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	return "\\x" + strconv.FormatUint(uint64(c), 16)
}

// IsProtocolError reports whether err is a *ProtocolError.
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}
