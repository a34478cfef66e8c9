package resp

import (
	"fmt"
	"strings"
	"testing"
)

// parseAll runs a parser over in, fed chunk bytes at a time (0: all at
// once), as a connection does: unconsumed bytes stay at the front. It
// returns the commands (arguments joined by "|"), the first error, and
// how many bytes were left unconsumed.
func parseAll(lim Limits, in []byte, chunk int) (cmds []string, rest int, err error) {
	cmds, rest, _, err = parseAllExt(lim, in, chunk, 0)
	return cmds, rest, err
}

// parseAllExt is parseAll that, when extMin > 0 and the parser waits for
// the body of a bulk of at least extMin bytes whose whole body is in the
// input, takes that body out of the stream and gives it with SetExternal,
// as a connection receiving a large argument into a buffer of its own.
// ext reports whether it did; the unconsumed count then excludes the
// bodies taken.
func parseAllExt(lim Limits, in []byte, chunk, extMin int) (cmds []string, rest int, ext bool, err error) {
	return parseAllGen(lim, in, chunk, extMin, false)
}

// parseAllGen is parseAllExt with the parser's general path only when
// general is set (Parser.whole never used).
func parseAllGen(lim Limits, in []byte, chunk, extMin int, general bool) (cmds []string, rest int, ext bool, err error) {
	p := Parser{Limits: lim, general: general}
	var buf []byte
	for off := 0; ; {
		if pos, l, ok := p.PendingBulk(); ok && extMin > 0 && l >= extMin && len(buf)-pos < l && len(buf)-pos+len(in)-off >= l {
			body := append([]byte(nil), buf[pos:]...)
			take := l - len(body)
			body = append(body, in[off:off+take]...)
			off += take
			buf = buf[:pos:pos]
			p.SetExternal(body)
			ext = true
		}
		if chunk <= 0 {
			buf, off = in, len(in)
		} else if off < len(in) {
			end := min(off+chunk, len(in))
			buf = append(buf, in[off:end]...)
			off = end
		}
		for {
			args, n, err := p.Next(buf)
			if err != nil {
				return cmds, len(buf), ext, err
			}
			if n == 0 {
				break
			}
			if n > len(buf) {
				panic(fmt.Sprintf("consumed %d of %d bytes", n, len(buf)))
			}
			parts := make([]string, len(args))
			for i, a := range args {
				parts[i] = string(a)
			}
			cmds = append(cmds, strings.Join(parts, "|"))
			buf = buf[n:]
		}
		if off >= len(in) {
			return cmds, len(buf), ext, nil
		}
	}
}

func TestParse(t *testing.T) {
	small := Limits{MaxBulk: 8, MaxArgs: 3, MaxInline: 16, MaxCommand: 40}
	for _, c := range []struct {
		name string
		lim  Limits
		in   string
		want []string // commands; "" is an empty command
		err  string   // substring of the error; "" for none
		rest int      // unconsumed bytes (incomplete command)
	}{
		{name: "get", in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", want: []string{"GET|k"}},
		{name: "pipelined", in: "*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva\r\nl\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
			want: []string{"PING", "SET|k|va\r\nl", "GET|k"}},
		{name: "empty bulk", in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", want: []string{"ECHO|"}},
		{name: "binary bulk", in: "*2\r\n$4\r\nECHO\r\n$3\r\n\x00\r\xff\r\n", want: []string{"ECHO|\x00\r\xff"}},
		{name: "inline", in: "PING\r\nset  k\tv\nGET k\r\n", want: []string{"PING", "set|k|v", "GET|k"}},
		{name: "inline blank lines", in: "\r\n  \n\nPING\n", want: []string{"", "", "", "PING"}},
		{name: "empty and null arrays", in: "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", want: []string{"", "", "PING"}},
		{name: "truncated header", in: "*2\r", rest: 3},
		{name: "truncated bulk", in: "*2\r\n$3\r\nGET\r\n$5\r\nab", rest: 19},
		{name: "truncated crlf", in: "*1\r\n$4\r\nPING\r", rest: 13},
		{name: "truncated inline", in: "PING", rest: 4},
		{name: "after a complete one", in: "*1\r\n$4\r\nPING\r\n*1\r\n$4", want: []string{"PING"}, rest: 6},
		{name: "not a bulk", in: "*1\r\n:4\r\n", err: "expected '$', got ':'"},
		{name: "negative bulk", in: "*1\r\n$-1\r\n", err: "invalid bulk length"},
		{name: "huge bulk", in: "*1\r\n$99999999999\r\n", err: "invalid bulk length"},
		{name: "overflowing bulk", in: "*1\r\n$9999999999999999999999\r\n", err: "invalid bulk length"},
		{name: "bulk over limit", lim: small, in: "*1\r\n$9\r\n", err: "invalid bulk length"},
		{name: "bulk at limit", lim: small, in: "*1\r\n$8\r\n12345678\r\n", want: []string{"12345678"}},
		{name: "huge array", in: "*2147483648\r\n", err: "invalid multibulk length"},
		{name: "array over limit", lim: small, in: "*4\r\n", err: "invalid multibulk length"},
		{name: "bad count", in: "*x\r\n", err: "invalid multibulk length"},
		{name: "count with plus", in: "*+1\r\n", err: "invalid multibulk length"},
		{name: "bad bulk length", in: "*1\r\n$1a\r\n", err: "invalid bulk length"},
		{name: "empty bulk length", in: "*1\r\n$\r\n", err: "invalid bulk length"},
		{name: "bulk without crlf", in: "*1\r\n$2\r\nabcd", err: "not terminated by CRLF"},
		{name: "header without lf", in: "*1\rx", err: "not terminated by CRLF"},
		{name: "command over limit", lim: small, in: "*3\r\n$8\r\n12345678\r\n$8\r\n12345678\r\n$8\r\n", err: "command too large"},
		{name: "long inline", lim: small, in: strings.Repeat("a", 16), err: "too big inline request"},
		{name: "long count line", lim: small, in: "*" + strings.Repeat("1", 16), err: "too big mbulk count string"},
		{name: "long bulk line", lim: small, in: "*1\r\n$" + strings.Repeat("1", 16), err: "too big bulk count string"},
		{name: "inline too many args", lim: small, in: "a b c d\n", err: "too many arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, chunk := range []int{0, 1, 2, 7} {
				cmds, rest, err := parseAll(c.lim, []byte(c.in), chunk)
				if c.err != "" {
					if err == nil || !strings.Contains(err.Error(), c.err) || !IsProtocolError(err) {
						t.Fatalf("chunk %d: error %v, want %q", chunk, err, c.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("chunk %d: %v", chunk, err)
				}
				if fmt.Sprintf("%q", cmds) != fmt.Sprintf("%q", c.want) && !(len(cmds) == 0 && len(c.want) == 0) {
					t.Fatalf("chunk %d: commands %q, want %q", chunk, cmds, c.want)
				}
				if rest != c.rest {
					t.Fatalf("chunk %d: %d bytes left, want %d", chunk, rest, c.rest)
				}
			}
		})
	}
}

// TestParseNoAllocFromDeclaredSize: a declared size does not make the parser
// allocate: a command declaring the largest bulk and argument count costs
// what a small one does.
func TestParseNoAllocFromDeclaredSize(t *testing.T) {
	var p Parser
	in := []byte(fmt.Sprintf("*%d\r\n$%d\r\nabc", DefaultMaxArgs, DefaultMaxBulk))
	allocs := testing.AllocsPerRun(100, func() {
		p.Reset()
		if _, n, err := p.Next(in); n != 0 || err != nil {
			t.Fatalf("n %d err %v", n, err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per incomplete huge command", allocs)
	}
}

// FuzzParse feeds arbitrary bytes to the parser in chunks of every size:
// it must never panic or consume more than it was given, and chunking must
// not change the commands parsed or whether the input is an error.
func FuzzParse(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n"), uint8(3))
	f.Add([]byte("PING\r\nGET k\r\n"), uint8(1))
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$5\r\nab"), uint8(2))
	f.Add([]byte("*1\r\n$99999999999\r\n"), uint8(5))
	f.Add([]byte("*-5\r\n$-3\r\n"), uint8(4))
	lim := Limits{MaxBulk: 64, MaxArgs: 8, MaxInline: 32, MaxCommand: 256}
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20\r\n01234567890123456789\r\n*1\r\n$4\r\nPING\r\n"), uint8(7))
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$10\r\n0123456789xx"), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		whole, wrest, werr := parseAll(lim, in, 0)
		// The one-pass path (Parser.whole) against the general one alone.
		gen, grest, _, gerr := parseAllGen(lim, in, 0, 0, true)
		if fmt.Sprintf("%q %v", whole, werr) != fmt.Sprintf("%q %v", gen, gerr) || (werr == nil && wrest != grest) {
			t.Fatalf("with the one-pass path: %q %d %v, general path only: %q %d %v", whole, wrest, werr, gen, grest, gerr)
		}
		parts, prest, perr := parseAll(lim, in, int(split)%17+1)
		// Bodies of at least 8 bytes received apart (SetExternal): the same
		// commands and errors.
		extd, _, ext, eerr := parseAllExt(lim, in, int(split)%17+1, 8)
		if (werr == nil) != (eerr == nil) || (ext && fmt.Sprintf("%q", whole) != fmt.Sprintf("%q", extd)) {
			t.Fatalf("whole: %q %v, with external bodies: %q %v", whole, werr, extd, eerr)
		}
		if eerr != nil && !IsProtocolError(eerr) {
			t.Fatalf("not a protocol error: %v", eerr)
		}
		if (werr == nil) != (perr == nil) {
			t.Fatalf("whole: %v, in chunks of %d: %v", werr, split%17+1, perr)
		}
		if werr != nil && !IsProtocolError(werr) {
			t.Fatalf("not a protocol error: %v", werr)
		}
		if fmt.Sprintf("%q", whole) != fmt.Sprintf("%q", parts) {
			t.Fatalf("whole: %q, in chunks: %q", whole, parts)
		}
		if werr == nil && wrest != prest {
			t.Fatalf("unconsumed: %d whole, %d in chunks", wrest, prest)
		}
	})
}

// FuzzCount: the one-pass header number (Parser.count) agrees with line
// and parseInt, the general path, on every line it accepts, and accepts
// the plain ones.
func FuzzCount(f *testing.F) {
	f.Add([]byte("$4096\r\n"), uint8(1), uint8(0))
	f.Add([]byte("*3\r\n"), uint8(1), uint8(2))
	f.Add([]byte("$-1\r\n"), uint8(1), uint8(0))
	f.Add([]byte("$123456789012345678\r\n"), uint8(1), uint8(0))
	f.Add([]byte("$1234567890123456789\r\n"), uint8(1), uint8(0))
	f.Add([]byte("$12\r"), uint8(1), uint8(0))
	f.Add([]byte("$12\n\r"), uint8(1), uint8(0))
	f.Add([]byte("$12345\r\n"), uint8(1), uint8(4))
	f.Fuzz(func(t *testing.T, buf []byte, from, inline uint8) {
		if int(from) > len(buf) {
			return
		}
		p := Parser{Limits: Limits{MaxInline: int(inline)}}
		p.lim = p.Limits.withDefaults()
		v, cr, ok := p.count(buf, int(from))
		line, lok, err := p.line(buf, int(from), "too big")
		var w int64
		var wok bool
		if lok && err == nil {
			w, wok = parseInt(buf[from:line])
		}
		if ok && (!wok || w != v || line != cr) {
			t.Fatalf("%q from %d: count %d at %d, line+parseInt %d (%v) at %d (%v, %v)", buf, from, v, cr, w, wok, line, lok, err)
		}
		if !ok && wok && w >= 0 && len(buf[from:line]) > 0 && buf[from] != '-' {
			t.Fatalf("%q from %d: count refused %d, which line+parseInt read", buf, from, w)
		}
	})
}

// TestLookupCommand: every command is found by its name in lower, upper
// and mixed case, and near misses are not.
func TestLookupCommand(t *testing.T) {
	for name, c := range commands {
		up := []byte(strings.ToUpper(name))
		mixed := []byte(name)
		mixed[0] = up[0]
		for _, b := range [][]byte{[]byte(name), up, mixed} {
			if got := lookupCommand(b); got != c {
				t.Errorf("lookupCommand(%q) = %v, want %s", b, got, name)
			}
		}
		for _, b := range [][]byte{[]byte(name + "x"), []byte(name[:len(name)-1]), append([]byte(name[:len(name)-1]), name[len(name)-1]^0x01)} {
			if got := lookupCommand(b); got != nil && got.name != string(b) {
				t.Errorf("lookupCommand(%q) = %s", b, got.name)
			}
		}
	}
	for _, b := range []string{"", "sét", "get\x00", strings.Repeat("a", 25), "G\x05T", "[et"} {
		if got := lookupCommand([]byte(b)); got != nil {
			t.Errorf("lookupCommand(%q) = %s", b, got.name)
		}
	}
}
