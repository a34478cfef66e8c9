package resp

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// User is an ACL user. The default user is named "default": without a
// Config.Password it needs no password (nopass), as Redis's default user.
type User struct {
	Name     string
	Password string
	// ReadOnly users may run only commands that do not write (read,
	// connection and introspection commands): Redis's "+@read" role. The
	// others run every command ("+@all").
	ReadOnly bool
}

// user is an ACL user: its name and its current rules (ACL SETUSER swaps
// them; connections authenticated as the user see the change at their
// next command).
type user struct {
	name  string
	rules atomic.Pointer[aclRules]
}

func newUser(name string, r *aclRules) *user {
	u := &user{name: name}
	u.rules.Store(r)
	return u
}

func init() {
	register(
		&command{name: "multi", arity: 1, flags: fNoLock | fNoMulti | fFast, group: "transactions", summary: "Start a transaction", fn: cmdMulti},
		&command{name: "exec", arity: 1, flags: fNoMulti, group: "transactions", summary: "Execute a transaction", fn: cmdExec},
		&command{name: "discard", arity: 1, flags: fNoMulti | fFast, group: "transactions", summary: "Discard a transaction", fn: cmdDiscard},
		&command{name: "watch", arity: -2, flags: fNoMulti | fFast, first: 1, last: -1, step: 1, group: "transactions", summary: "Watch keys for a transaction", fn: cmdWatch},
		&command{name: "unwatch", arity: 1, flags: fFast, group: "transactions", summary: "Forget watched keys", fn: cmdUnwatch},
	)
}

func cmdMulti(cn *conn, _ [][]byte) {
	if cn.inMulti {
		cn.fail("MULTI calls can not be nested")
		return
	}
	cn.inMulti, cn.multiErr, cn.queue = true, false, cn.queue[:0]
	cn.out.simple("OK")
}

func (cn *conn) endMulti() {
	cn.inMulti, cn.multiErr = false, false
	clear(cn.queue)
	cn.queue = cn.queue[:0]
	cn.unwatchAll()
}

func cmdDiscard(cn *conn, _ [][]byte) {
	if !cn.inMulti {
		cn.fail("DISCARD without MULTI")
		return
	}
	cn.endMulti()
	cn.out.simple("OK")
}

func cmdExec(cn *conn, _ [][]byte) {
	if !cn.inMulti {
		cn.fail("EXEC without MULTI")
		return
	}
	if cn.multiErr {
		cn.endMulti()
		cn.fail("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if cn.dirtyCAS {
		cn.endMulti()
		cn.out.nullArray()
		return
	}
	q := cn.queue
	cn.inMulti = false
	cn.inExec = true
	cn.out.arrayHeader(len(q))
	for _, args := range q {
		cn.run(lookupCommand(args[0]), args)
	}
	cn.inExec = false
	cn.endMulti()
}

func cmdWatch(cn *conn, args [][]byte) {
	if cn.inMulti {
		cn.fail("WATCH inside MULTI is not allowed")
		return
	}
	d := cn.db()
	for _, k := range args[1:] {
		key := string(k)
		dup := false
		for _, w := range cn.watched {
			if w.db == cn.dbi && w.key == key {
				dup = true
			}
		}
		if dup {
			continue
		}
		cn.watched = append(cn.watched, blockKey{cn.dbi, key})
		d.watch[key] = append(d.watch[key], cn)
	}
	cn.out.simple("OK")
}

func cmdUnwatch(cn *conn, _ [][]byte) {
	cn.unwatchAll()
	cn.out.simple("OK")
}

// unwatchAll forgets the connection's watched keys (keyspace lock held).
func (cn *conn) unwatchAll() {
	for _, w := range cn.watched {
		d := cn.srv.ks.dbs[w.db]
		cs := d.watch[w.key]
		for i, c := range cs {
			if c == cn {
				cs = append(cs[:i], cs[i+1:]...)
				break
			}
		}
		if len(cs) == 0 {
			delete(d.watch, w.key)
		} else {
			d.watch[w.key] = cs
		}
	}
	cn.watched = cn.watched[:0]
	cn.dirtyCAS = false
}

// authenticate checks a user name and password; nil when they do not match.
// A disabled user (off) authenticates nobody.
func (s *Server) authenticate(name, pass []byte) *user {
	u := s.user(string(name))
	if u == nil {
		return nil
	}
	if r := u.rules.Load(); r.enabled && !r.deleted && r.checkPassword(pass) {
		return u
	}
	return nil
}

// user returns the user named name, or nil.
func (s *Server) user(name string) *user {
	s.umu.RLock()
	defer s.umu.RUnlock()
	return s.users[name]
}

func cmdAuth(cn *conn, args [][]byte) {
	if len(args) > 3 {
		cn.fail(errSyntax)
		return
	}
	name, pass := []byte("default"), args[1]
	if len(args) == 3 {
		name, pass = args[1], args[2]
	} else if u := cn.srv.user("default"); u != nil && u.rules.Load().nopass {
		cn.fail("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	u := cn.srv.authenticate(name, pass)
	if u == nil {
		cn.srv.stats.authFailed.Add(1)
		cn.fail(errBadPass)
		return
	}
	cn.user = u
	cn.publish()
	cn.out.simple("OK")
}

func cmdHello(cn *conn, args [][]byte) {
	proto := cn.out.proto
	if len(args) >= 2 {
		v, ok := str2ll(args[1])
		if !ok {
			cn.fail("Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			cn.fail("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var u *user
	var name []byte
	setName := false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eq(args[i], "AUTH") && more >= 2:
			if u = cn.srv.authenticate(args[i+1], args[i+2]); u == nil {
				cn.srv.stats.authFailed.Add(1)
				cn.fail(errBadPass)
				return
			}
			i += 2
		case eq(args[i], "SETNAME") && more >= 1:
			name, setName = args[i+1], true
			i++
		default:
			cn.fail("Syntax error in HELLO option '" + sanitize(args[i]) + "'")
			return
		}
	}
	if u == nil && cn.user == nil {
		cn.fail("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName && !validName(name) {
		cn.fail("Client names cannot contain spaces, newlines or special characters.")
		return
	}
	if u != nil {
		cn.user = u
	}
	if setName {
		cn.name = string(name)
	}
	cn.out.proto = proto
	cn.publish()
	o := &cn.out
	o.mapHeader(7)
	o.bulkString("server")
	o.bulkString("redis")
	o.bulkString("version")
	o.bulkString(Version)
	o.bulkString("proto")
	o.int(int64(proto))
	o.bulkString("id")
	o.int(cn.id)
	o.bulkString("mode")
	o.bulkString("standalone")
	o.bulkString("role")
	o.bulkString("master")
	o.bulkString("modules")
	o.arrayHeader(0)
}

func validName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

func cmdClient(cn *conn, args [][]byte) {
	o := &cn.out
	sub := strings.ToUpper(string(args[1]))
	switch {
	case sub == "ID" && len(args) == 2:
		o.int(cn.id)
	case sub == "GETNAME" && len(args) == 2:
		if cn.name == "" {
			o.null()
		} else {
			o.bulkString(cn.name)
		}
	case sub == "SETNAME" && len(args) == 3:
		if !validName(args[2]) {
			cn.fail("Client names cannot contain spaces, newlines or special characters.")
			return
		}
		cn.name = string(args[2])
		cn.publish()
		o.simple("OK")
	case sub == "SETINFO" && len(args) == 4:
		o.simple("OK")
	case sub == "NO-EVICT" && len(args) == 3:
		o.simple("OK")
	case sub == "INFO" && len(args) == 2:
		o.bulkString(cn.describe(time.Now()))
	case sub == "LIST":
		now := time.Now()
		var sb strings.Builder
		cn.srv.mu.Lock()
		for c := range cn.srv.clients {
			sb.WriteString(c.describe(now))
		}
		cn.srv.mu.Unlock()
		o.bulkString(sb.String())
	case sub == "HELP":
		lines := []string{"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "ID", "GETNAME", "SETNAME <name>", "SETINFO <option> <value>", "INFO", "LIST", "NO-EVICT (ON|OFF)"}
		o.arrayHeader(len(lines))
		for _, l := range lines {
			o.simple(l)
		}
	case sub == "ID" || sub == "GETNAME" || sub == "SETNAME" || sub == "SETINFO" || sub == "NO-EVICT" || sub == "INFO":
		cn.arity("client|" + strings.ToLower(sub))
	default:
		cn.fail("unknown subcommand '" + sanitize(args[1]) + "'. Try CLIENT HELP.")
	}
}

// describe is the connection's CLIENT LIST line (Redis's fields that this
// server has; the others are zero). It reads only what other goroutines
// may read (atomics and fields fixed at accept).
func (cn *conn) describe(now time.Time) string {
	u := "default"
	if p := cn.pubUser.Load(); p != nil {
		u = *p
	}
	name := ""
	if p := cn.pubName.Load(); p != nil {
		name = *p
	}
	return "id=" + strconv.FormatInt(cn.id, 10) + " addr=" + cn.addr + " laddr=" + cn.laddr +
		" fd=-1 name=" + name + " age=" + strconv.FormatInt(int64(now.Sub(cn.created)/time.Second), 10) +
		" idle=" + strconv.FormatInt(int64(now.Sub(time.Unix(0, cn.lastCmd.Load()))/time.Second), 10) + " flags=N db=" + strconv.Itoa(int(cn.pubDB.Load())) +
		" sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=NULL user=" + u +
		" redir=-1 resp=" + strconv.Itoa(int(cn.pubProto.Load())) + "\n"
}
