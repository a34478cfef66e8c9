package respbench

import (
	"errors"
	"fmt"
)

// Shape is the reply a load test expects to every request: a status
// ('+', its text OK), an integer (':'), a bulk string of N bytes ('$'),
// or an array of Elems bulk strings of N bytes each ('*').
type Shape struct {
	Kind  byte
	N     int
	Elems int
}

// maxHeader bounds one reply's header line (type byte, digits, CRLF).
const maxHeader = 32

// ReplyScanner checks a stream of RESP2 replies against a Shape as the
// bytes arrive, in pieces of any size, without copying values or
// allocating: each header's type and length are checked, each bulk
// string's body is skipped by its length and its CRLF terminator checked.
// An error reply ('-'), another type, another length, a malformed or
// over-long header are errors, after which the scanner stays failed.
// The zero value is unusable; make one with NewReplyScanner.
type ReplyScanner struct {
	want      Shape
	line      [maxHeader]byte
	ln        int  // header bytes held in line
	body      int  // bulk body bytes still to skip
	crlf      int  // terminator bytes still to check after a body (2, 1, 0)
	elemsLeft int  // bulk strings of the current array still to come
	inArray   bool // inside an array reply
	err       error
}

// NewReplyScanner returns a scanner expecting replies of shape want.
func NewReplyScanner(want Shape) (*ReplyScanner, error) {
	switch want.Kind {
	case '+', ':':
	case '$', '*':
		if want.N < 0 || want.Elems < 0 {
			return nil, errors.New("respbench: negative reply length")
		}
	default:
		return nil, fmt.Errorf("respbench: reply kind %q", want.Kind)
	}
	return &ReplyScanner{want: want}, nil
}

var errHeader = errors.New("respbench: malformed reply header")

// Feed consumes b (which it does not keep) and returns how many whole
// replies it completed, or the first error.
func (s *ReplyScanner) Feed(b []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	done := 0
	for len(b) > 0 {
		if s.body > 0 {
			k := min(s.body, len(b))
			s.body -= k
			b = b[k:]
			continue
		}
		if s.crlf > 0 {
			want := byte('\n')
			if s.crlf == 2 {
				want = '\r'
			}
			if b[0] != want {
				return done, s.fail(errors.New("respbench: bulk string longer than its header says"))
			}
			b = b[1:]
			if s.crlf--; s.crlf == 0 && s.endBulk() {
				done++
			}
			continue
		}
		// A header line: up to its LF.
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if s.ln+i > maxHeader {
			return done, s.fail(errHeader)
		}
		copy(s.line[s.ln:], b[:i])
		s.ln += i
		if i == len(b) {
			return done, nil
		}
		b = b[i+1:]
		line := s.line[:s.ln]
		s.ln = 0
		complete, err := s.header(line)
		if err != nil {
			return done, s.fail(err)
		}
		if complete {
			done++
		}
	}
	return done, nil
}

func (s *ReplyScanner) fail(err error) error {
	s.err = err
	return err
}

// endBulk ends a bulk string's body and reports whether that completed
// a reply.
func (s *ReplyScanner) endBulk() bool {
	if !s.inArray {
		return true
	}
	if s.elemsLeft--; s.elemsLeft == 0 {
		s.inArray = false
		return true
	}
	return false
}

// header checks one header line (without its LF) and reports whether it
// completed a reply.
func (s *ReplyScanner) header(line []byte) (bool, error) {
	if len(line) < 2 || line[len(line)-1] != '\r' {
		return false, errHeader
	}
	kind, rest := line[0], line[1:len(line)-1]
	if kind == '-' {
		return false, fmt.Errorf("respbench: error reply %q", rest)
	}
	want := s.want.Kind
	if s.inArray {
		want = '$'
	}
	if kind != want {
		return false, fmt.Errorf("respbench: reply type %q, want %q", kind, want)
	}
	switch kind {
	case '+':
		if string(rest) != "OK" {
			return false, fmt.Errorf("respbench: status %q, want OK", rest)
		}
		return true, nil
	case ':':
		if _, ok := parseLen(rest, true); !ok {
			return false, errHeader
		}
		return true, nil
	case '$':
		n, ok := parseLen(rest, false)
		if !ok || n != s.want.N {
			return false, fmt.Errorf("respbench: bulk string of %q bytes, want %d", rest, s.want.N)
		}
		s.body, s.crlf = n, 2
		return false, nil
	}
	// '*'
	n, ok := parseLen(rest, false)
	if !ok || n != s.want.Elems {
		return false, fmt.Errorf("respbench: array of %q elements, want %d", rest, s.want.Elems)
	}
	if n == 0 {
		return true, nil
	}
	s.inArray, s.elemsLeft = true, n
	return false, nil
}

// parseLen parses a decimal of at most 18 digits, with a leading minus
// sign when signed; ok is false for anything else.
func parseLen(b []byte, signed bool) (int, bool) {
	neg := false
	if signed && len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
