package resp

import (
	"errors"
	"strconv"
	"strings"

	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// Version is the Redis version the server reports (HELLO, INFO): the
// Redis 7 command set it implements a subset of.
const Version = "7.0.0"

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// upper copies an ASCII command name into scratch in upper case (at most
// len(scratch) bytes: longer names are unknown anyway).
func upper(scratch []byte, b []byte) []byte {
	n := copy(scratch, b)
	for i := 0; i < n; i++ {
		if c := scratch[i]; c >= 'a' && c <= 'z' {
			scratch[i] = c - 'a' + 'A'
		}
	}
	if len(b) > len(scratch) {
		return scratch[:0]
	}
	return scratch[:n]
}

func (cn *conn) fail(msg string) {
	cn.srv.stats.errors.Add(1)
	cn.out.err(msg)
}

func (cn *conn) arity(name string) {
	cn.fail("wrong number of arguments for '" + strings.ToLower(name) + "' command")
}

// storeErr answers a failed store call.
func (cn *conn) storeErr(err error) {
	if errors.Is(err, kv.ErrList) {
		cn.fail(wrongType)
		return
	}
	msg := "store error"
	if err != nil {
		msg = err.Error()
	}
	cn.fail(msg)
}

// exec answers one command; args alias the read buffer.
func (cn *conn) exec(args [][]byte) {
	cn.srv.stats.commands.Add(1)
	var scratch [16]byte
	name := upper(scratch[:], args[0])
	o := &cn.out
	st := cn.srv.store
	n := len(args)
	switch string(name) {
	case "PING":
		switch n {
		case 1:
			o.simple("PONG")
		case 2:
			o.bulk(args[1])
		default:
			cn.arity("ping")
		}
	case "ECHO":
		if n != 2 {
			cn.arity("echo")
			return
		}
		o.bulk(args[1])
	case "GET":
		if n != 2 {
			cn.arity("get")
			return
		}
		cn.get(args[1:2], false)
	case "MGET":
		if n < 2 {
			cn.arity("mget")
			return
		}
		cn.get(args[1:], true)
	case "SET":
		if n < 3 {
			cn.arity("set")
			return
		}
		if n > 3 {
			cn.fail("SET options are not supported (only SET key value)")
			return
		}
		cn.put(args[1:])
	case "MSET":
		if n < 3 || n%2 == 0 {
			cn.arity("mset")
			return
		}
		cn.put(args[1:])
	case "DEL", "UNLINK":
		if n < 2 {
			cn.arity(string(name))
			return
		}
		deleted := 0
		for _, k := range args[1:] {
			cn.q = kv.Query{Op: workload.OpDelete, Keys: append(cn.q.Keys[:0], k), Vals: cn.q.Vals[:0]}
			if err := st.Exec(&cn.q, &cn.res, cn.srv.cfg.MaxReply); err != nil {
				cn.storeErr(err)
				return
			}
			if cn.res.Status == workload.StatusOK {
				deleted++
			}
		}
		o.int(int64(deleted))
	case "EXISTS":
		if n < 2 {
			cn.arity("exists")
			return
		}
		found := 0
		for _, k := range args[1:] {
			if st.ListLen(k) > 0 {
				found++
			}
		}
		o.int(int64(found))
	case "RPUSH", "LPUSH":
		if n < 3 {
			cn.arity(string(name))
			return
		}
		l, err := st.Push(args[1], args[2:], name[0] == 'L')
		if err != nil {
			cn.storeErr(err)
			return
		}
		o.int(int64(l))
	case "LLEN":
		if n != 2 {
			cn.arity("llen")
			return
		}
		o.int(int64(st.ListLen(args[1])))
	case "LRANGE":
		if n != 4 {
			cn.arity("lrange")
			return
		}
		start, ok1 := parseInt(args[2])
		stop, ok2 := parseInt(args[3])
		if !ok1 || !ok2 {
			cn.fail("value is not an integer or out of range")
			return
		}
		if err := st.Range(args[1], int(start), int(stop), &cn.res, cn.srv.cfg.MaxReply); err != nil {
			cn.storeErr(err)
			return
		}
		cn.values(cn.res.Vals)
		cn.res.Vals, cn.res.Bytes = cn.res.Vals[:0], 0
	case "DBSIZE":
		o.int(int64(st.Len()))
	case "FLUSHALL", "FLUSHDB":
		st.Clear()
		o.simple("OK")
	case "SELECT":
		if n != 2 {
			cn.arity("select")
			return
		}
		if string(args[1]) != "0" {
			cn.fail("DB index is out of range")
			return
		}
		o.simple("OK")
	case "QUIT":
		o.simple("OK")
		cn.quit = true
	case "COMMAND":
		if n >= 2 && strings.EqualFold(string(args[1]), "count") {
			o.int(0)
			return
		}
		o.arrayHeader(0) // COMMAND, COMMAND DOCS, COMMAND INFO: nothing described
	case "CONFIG":
		cn.config(args)
	case "HELLO":
		cn.hello(args)
	case "CLIENT":
		if n < 2 {
			cn.arity("client")
			return
		}
		switch strings.ToUpper(string(args[1])) {
		case "SETNAME", "SETINFO":
			o.simple("OK")
		case "GETNAME":
			o.null()
		case "ID":
			o.int(1)
		default:
			cn.fail("unknown subcommand '" + sanitize(args[1]) + "'. Try CLIENT HELP.")
		}
	case "INFO":
		st := cn.srv.Stats()
		o.bulkString("# Server\r\nredis_version:" + Version + "\r\nredis_mode:standalone\r\nserver_name:cornflakes\r\n" +
			"# Clients\r\nconnected_clients:" + strconv.Itoa(cn.srv.connCount()) + "\r\n" +
			"# Stats\r\ntotal_commands_processed:" + strconv.FormatUint(st.Commands, 10) + "\r\n" +
			"# Keyspace\r\ndb0:keys=" + strconv.Itoa(cn.srv.store.Len()) + "\r\n")
	default:
		msg := "unknown command '" + sanitize(args[0]) + "', with args beginning with:"
		for _, a := range args[1:min(n, 4)] {
			msg += " '" + sanitize(a) + "'"
		}
		cn.fail(msg)
	}
}

// sanitize shortens b to 128 bytes and replaces bytes that do not belong in
// an error line.
func sanitize(b []byte) string {
	b = b[:min(len(b), 128)]
	s := []byte(string(b))
	for i, c := range s {
		if c < 0x20 || c >= 0x7f {
			s[i] = ' '
		}
	}
	return string(s)
}

// get answers GET (one key: nil when absent, WRONGTYPE for a list) and MGET
// (an array: nil for absent keys and lists). The values are gathered first
// so that a reply over MaxReply is refused whole.
func (cn *conn) get(keys [][]byte, multi bool) {
	st := cn.srv.store
	vals := cn.vals[:0] // the zero Buf marks a nil reply
	total := 0
	defer func() {
		for i, b := range vals { // left after an error
			if b != (mem.Buf{}) {
				_ = b.Release()
			}
			vals[i] = mem.Buf{}
		}
		if cap(vals) > 1024 { // a large MGET's: not kept
			vals = nil
		}
		cn.vals = vals[:0]
	}()
	for _, k := range keys {
		cn.q = kv.Query{Op: workload.OpGet, Keys: append(cn.q.Keys[:0], k), Vals: cn.q.Vals[:0]}
		err := st.Exec(&cn.q, &cn.res, cn.srv.cfg.MaxReply)
		switch {
		case cn.res.Status == workload.StatusOK:
			total += cn.res.Bytes
			vals = append(vals, cn.res.Vals[0])
			cn.res.Vals[0] = mem.Buf{}
			cn.res.Vals, cn.res.Bytes = cn.res.Vals[:0], 0
		case cn.res.Status == workload.StatusNotFound || multi:
			vals = append(vals, mem.Buf{})
		default:
			cn.storeErr(err)
			return
		}
		if total > cn.srv.cfg.MaxReply {
			cn.fail("reply of more than " + strconv.Itoa(cn.srv.cfg.MaxReply) + " bytes")
			return
		}
	}
	if !multi {
		cn.value(vals[0])
		vals[0] = mem.Buf{}
		vals = vals[:0]
		return
	}
	cn.values(vals)
	vals = vals[:0]
}

// values writes an array of values, taking ownership of every reference
// (zero Bufs are nil replies) and zeroing vals.
func (cn *conn) values(vals []mem.Buf) {
	cn.out.arrayHeader(len(vals))
	for i, b := range vals {
		cn.value(b)
		vals[i] = mem.Buf{}
	}
}

func (cn *conn) value(b mem.Buf) {
	if b == (mem.Buf{}) {
		cn.out.null()
		return
	}
	if cn.out.value(b, cn.srv.cfg.Threshold) {
		cn.srv.stats.zc.Add(1)
		cn.srv.stats.zcBytes.Add(uint64(b.Len()))
	}
}

// put answers SET and MSET (pairs of key and value).
func (cn *conn) put(kvs [][]byte) {
	cn.q.Keys, cn.q.Vals = cn.q.Keys[:0], cn.q.Vals[:0]
	for i := 0; i+1 < len(kvs); i += 2 {
		cn.q.Keys = append(cn.q.Keys, kvs[i])
		cn.q.Vals = append(cn.q.Vals, kvs[i+1])
	}
	cn.q.Op, cn.q.Index = workload.OpPutM, 0
	if len(cn.q.Keys) == 1 {
		cn.q.Op = workload.OpPut
	}
	if err := cn.srv.store.Exec(&cn.q, &cn.res, cn.srv.cfg.MaxReply); err != nil {
		cn.storeErr(err)
		return
	}
	cn.out.simple("OK")
}

// config answers CONFIG GET with the two settings redis-benchmark asks for
// (save: "", appendonly: no) and nothing else; other subcommands but
// RESETSTAT are errors.
func (cn *conn) config(args [][]byte) {
	if len(args) < 2 {
		cn.arity("config")
		return
	}
	switch strings.ToUpper(string(args[1])) {
	case "GET":
		if len(args) < 3 {
			cn.arity("config|get")
			return
		}
		var pairs []string
		for _, pat := range args[2:] {
			p := strings.ToLower(string(pat))
			if p == "save" || p == "*" {
				pairs = append(pairs, "save", "")
			}
			if p == "appendonly" || p == "*" {
				pairs = append(pairs, "appendonly", "no")
			}
		}
		cn.out.arrayHeader(len(pairs))
		for _, s := range pairs {
			cn.out.bulkString(s)
		}
	case "RESETSTAT":
		cn.out.simple("OK")
	default:
		cn.fail("CONFIG " + sanitize(args[1]) + " is not supported")
	}
}

// hello answers HELLO as Redis does for protocol 2, and NOPROTO for any
// other version so that clients fall back to RESP2.
func (cn *conn) hello(args [][]byte) {
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			cn.fail("Protocol version is not an integer or out of range")
			return
		}
		if v != 2 {
			cn.fail("NOPROTO unsupported protocol version")
			return
		}
	}
	for i := 2; i < len(args); i++ {
		switch strings.ToUpper(string(args[i])) {
		case "AUTH":
			i += 2
		case "SETNAME":
			i++
		default:
			cn.fail("syntax error in HELLO option '" + sanitize(args[i]) + "'")
			return
		}
		if i >= len(args) {
			cn.fail("syntax error in HELLO option")
			return
		}
	}
	o := &cn.out
	o.arrayHeader(14)
	o.bulkString("server")
	o.bulkString("redis")
	o.bulkString("version")
	o.bulkString(Version)
	o.bulkString("proto")
	o.int(2)
	o.bulkString("id")
	o.int(1)
	o.bulkString("mode")
	o.bulkString("standalone")
	o.bulkString("role")
	o.bulkString("master")
	o.bulkString("modules")
	o.arrayHeader(0)
}

func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
