package resp

import (
	"strconv"
	"strings"
)

// Version is the Redis version the server reports (HELLO, INFO): the
// Redis 7 command set it implements a subset of.
const Version = "7.0.15"

// Error replies, as Redis words them.
const (
	wrongType  = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errInt     = "value is not an integer or out of range"
	errFloat   = "value is not a valid float"
	errSyntax  = "syntax error"
	errNoKey   = "no such key"
	errOOM     = "OOM command not allowed when used memory > 'maxmemory'."
	errNoAuth  = "NOAUTH Authentication required."
	errBadPass = "WRONGPASS invalid username-password pair or user is disabled."
)

func (cn *conn) fail(msg string) {
	cn.srv.stats.errors.Add(1)
	cn.out.err(msg)
}

func (cn *conn) arity(name string) {
	cn.fail("wrong number of arguments for '" + strings.ToLower(name) + "' command")
}

// str2ll parses a 64-bit integer as Redis's string2ll: an optional minus,
// no leading zeros (but "0"), no spaces or plus sign, within int64.
func str2ll(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	i := 0
	if neg {
		i = 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<64-1)/10 {
			return 0, false
		}
		v *= 10
		if v > 1<<64-1-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// intArg parses args[i] as an integer, answering the error itself.
func (cn *conn) intArg(b []byte) (int64, bool) {
	v, ok := str2ll(b)
	if !ok {
		cn.fail(errInt)
	}
	return v, ok
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

func eq(b []byte, s string) bool { return strings.EqualFold(string(b), s) }

// exec answers one command; args alias the read buffer and are used only
// while it executes.
func (cn *conn) exec(args [][]byte) {
	cn.srv.stats.commands.Add(1)
	c := lookupCommand(args[0])
	if c == nil {
		msg := "unknown command '" + string(args[0][:min(len(args[0]), 128)]) + "', with args beginning with: "
		as := ""
		for _, a := range args[1:] {
			if len(as) >= 128 {
				break
			}
			as += "'" + string(a[:min(len(a), 128-len(as))]) + "' "
		}
		msg += as
		cn.flagMulti()
		cn.fail(msg)
		return
	}
	if (c.arity > 0 && len(args) != c.arity) || (c.arity < 0 && len(args) < -c.arity) {
		cn.flagMulti()
		cn.arity(c.name)
		return
	}
	if cn.user == nil && c.flags&fNoAuth == 0 {
		cn.flagMulti()
		cn.fail(errNoAuth)
		return
	}
	if cn.user != nil {
		r := cn.user.rules.Load()
		if r.deleted { // ACL DELUSER: close, as Redis does
			cn.quit = true
			return
		}
		// canRun first: the name (a map lookup) only for a refusal.
		if c.aclID >= 0 && c.flags&fNoAuth == 0 && !r.canRun(c.aclID) && !cn.permitted(r, c.aclID, aclName(c, args)) {
			return
		}
		if !r.keysAllowed(c, args) {
			cn.flagMulti()
			cn.srv.stats.aclDenied.Add(1)
			cn.fail("NOPERM this user has no permissions to access one of the keys used as arguments")
			return
		}
	}
	if cn.inMulti && c.flags&fNoMulti == 0 {
		q := make([][]byte, len(args))
		for i, a := range args {
			q[i] = append([]byte(nil), a...)
		}
		cn.queue = append(cn.queue, q)
		cn.out.simple("QUEUED")
		return
	}
	if c.flags&fNoLock != 0 {
		c.fn(cn, args)
		return
	}
	s := cn.srv
	s.kmu.Lock()
	s.ks.gifts = cn.bigs
	cn.run(c, args)
	s.ks.gifts = nil
	s.serveBlocked()
	s.kmu.Unlock()
}

// run executes c with the keyspace lock held: the maxmemory check, the
// command, and the WATCH bookkeeping of the keys it writes.
func (cn *conn) run(c *command, args [][]byte) {
	s := cn.srv
	if c.flags&fDenyOOM != 0 && s.cfg.MaxMemory > 0 && !s.makeRoom() {
		cn.fail(errOOM)
		return
	}
	if c.flags&fWrite != 0 && c.first > 0 {
		d := cn.db()
		if len(d.watch) > 0 && c.flags&fTouches == 0 {
			last := c.last
			if last < 0 {
				last = len(args) + last
			}
			for i := c.first; i <= last && i < len(args); i += max(c.step, 1) {
				s.ks.touch(d, string(args[i]))
			}
		}
		s.ks.dirty++
	}
	c.fn(cn, args)
}

func (cn *conn) db() *db { return cn.srv.ks.dbs[cn.dbi] }

// touched marks the connections WATCHing key of the selected database
// (a command with fTouches that changes key).
func (cn *conn) touched(key []byte) { cn.srv.ks.touch(cn.db(), string(key)) }

// flagMulti marks a transaction being queued as failed (EXEC answers
// EXECABORT), as Redis does for a command refused while queuing.
func (cn *conn) flagMulti() {
	if cn.inMulti {
		cn.multiErr = true
	}
}

func init() {
	register(
		&command{name: "ping", arity: -1, flags: fNoLock | fFast, group: "connection", summary: "Ping the server", fn: cmdPing},
		&command{name: "echo", arity: 2, flags: fNoLock | fFast, group: "connection", summary: "Echo the given string", fn: func(cn *conn, a [][]byte) { cn.out.bulk(a[1]) }},
		&command{name: "quit", arity: -1, flags: fNoLock | fNoAuth | fNoMulti | fFast, group: "connection", summary: "Close the connection", fn: func(cn *conn, a [][]byte) { cn.out.simple("OK"); cn.quit = true }},
		&command{name: "select", arity: 2, flags: fNoLock | fFast, group: "connection", summary: "Change the selected database", fn: cmdSelect},
		&command{name: "hello", arity: -1, flags: fNoLock | fNoAuth | fNoMulti | fFast, group: "connection", summary: "Handshake with the server", fn: cmdHello},
		&command{name: "auth", arity: -2, flags: fNoLock | fNoAuth | fNoMulti | fFast, group: "connection", summary: "Authenticate the connection", fn: cmdAuth},
		&command{name: "client", arity: -2, flags: fNoLock, group: "connection", summary: "Connection management", fn: cmdClient},
		&command{name: "command", arity: -1, flags: fNoLock, group: "server", summary: "Introspect the command table", fn: cmdCommand},
		&command{name: "config", arity: -2, flags: fNoLock | fAdmin, group: "server", summary: "Get or set configuration", fn: cmdConfig},
		&command{name: "info", arity: -1, flags: 0, group: "server", summary: "Server information and statistics", fn: cmdInfo},
		&command{name: "acl", arity: -2, flags: fNoLock, group: "server", summary: "Access control lists", fn: cmdACL},
		&command{name: "dbsize", arity: 1, flags: fRead | fFast, group: "server", summary: "Number of keys in the selected database", fn: func(cn *conn, a [][]byte) { cn.out.int(int64(len(cn.db().keys))) }},
		&command{name: "flushdb", arity: -1, flags: fWrite, group: "server", summary: "Remove all keys of the selected database", fn: cmdFlushDB},
		&command{name: "flushall", arity: -1, flags: fWrite, group: "server", summary: "Remove all keys of all databases", fn: cmdFlushAll},
		&command{name: "time", arity: 1, flags: fNoLock | fFast, group: "server", summary: "The server time", fn: cmdTime},
	)
}

func cmdPing(cn *conn, args [][]byte) {
	switch len(args) {
	case 1:
		cn.out.simple("PONG")
	case 2:
		cn.out.bulk(args[1])
	default:
		cn.arity("ping")
	}
}

func cmdSelect(cn *conn, args [][]byte) {
	v, ok := str2ll(args[1])
	if !ok {
		cn.fail(errInt)
		return
	}
	if v < 0 || v >= NumDBs {
		cn.fail("DB index is out of range")
		return
	}
	cn.dbi = int(v)
	cn.publish()
	cn.out.simple("OK")
}

func cmdTime(cn *conn, _ [][]byte) {
	us := nowMs() * 1000
	cn.out.arrayHeader(2)
	cn.out.bulkString(strconv.FormatInt(us/1e6, 10))
	cn.out.bulkString(strconv.FormatInt(us%1e6, 10))
}

func flushArgs(cn *conn, args [][]byte) bool {
	if len(args) > 2 || (len(args) == 2 && !eq(args[1], "ASYNC") && !eq(args[1], "SYNC")) {
		cn.fail(errSyntax)
		return false
	}
	return true
}

func cmdFlushDB(cn *conn, args [][]byte) {
	if !flushArgs(cn, args) {
		return
	}
	d := cn.db()
	cn.srv.ks.touchAll(d)
	cn.srv.ks.flush(d)
	cn.srv.afterFlush()
	cn.out.simple("OK")
}

func cmdFlushAll(cn *conn, args [][]byte) {
	if !flushArgs(cn, args) {
		return
	}
	for _, d := range cn.srv.ks.dbs {
		cn.srv.ks.touchAll(d)
		cn.srv.ks.flush(d)
	}
	cn.srv.afterFlush()
	cn.out.simple("OK")
}
