package resp

import (
	"sort"
	"strings"
)

// permitted checks that r allows the ACL entry id (named name in the
// error); otherwise it answers NOPERM, counts it and reports false.
func (cn *conn) permitted(r *aclRules, id int, name string) bool {
	if r.canRun(id) {
		return true
	}
	cn.flagMulti()
	cn.srv.stats.aclDenied.Add(1)
	msg := "NOPERM this user has no permissions to run the '" + name + "' command"
	if name == "exec" { // Redis's execCommandAbort
		msg = "EXECABORT Transaction discarded because of: " + msg
		cn.endMulti()
	}
	cn.fail(msg)
	return false
}

// aclContainers are the commands Redis splits into subcommands: a denied
// one is named container|subcommand.
var aclContainers = map[string]bool{"client": true, "config": true, "command": true}

func aclName(c *command, args [][]byte) string {
	if aclContainers[c.name] && len(args) > 1 {
		return c.name + "|" + strings.ToLower(sanitize(args[1]))
	}
	return c.name
}

// aclArity is each ACL subcommand's arity, Redis's convention.
var aclArity = map[string]int{"cat": -2, "deluser": -3, "getuser": 3, "list": 2, "setuser": -3, "users": 2, "whoami": 2}

func cmdACL(cn *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	ar, ok := aclArity[sub]
	if !ok {
		cn.fail("unknown subcommand '" + sanitize(args[1]) + "'. Try ACL HELP.")
		return
	}
	if (ar > 0 && len(args) != ar) || (ar < 0 && len(args) < -ar) {
		if sub == "cat" {
			cn.fail("unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.")
		} else {
			cn.fail("wrong number of arguments for 'acl|" + sub + "' command")
		}
		return
	}
	if sub == "cat" && len(args) > 3 {
		cn.fail("unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.")
		return
	}
	if cn.user != nil && !cn.permitted(cn.user.rules.Load(), aclIndex["acl|"+sub], "acl|"+sub) {
		return
	}
	s, o := cn.srv, &cn.out
	switch sub {
	case "whoami":
		if cn.user == nil {
			o.bulkString("default")
		} else {
			o.bulkString(cn.user.name)
		}
	case "users":
		names := s.userNames()
		o.arrayHeader(len(names))
		for _, n := range names {
			o.bulkString(n)
		}
	case "list":
		names := s.userNames()
		o.arrayHeader(len(names))
		for _, n := range names {
			if u := s.user(n); u != nil {
				o.bulkString("user " + n + " " + u.rules.Load().describe())
			} else { // deleted meanwhile
				o.bulkString("user " + n + " off resetchannels -@all")
			}
		}
	case "cat":
		aclCat(cn, args)
	case "getuser":
		aclGetUser(cn, string(args[2]))
	case "setuser":
		aclSetUser(cn, args[2:])
	case "deluser":
		aclDelUser(cn, args[2:])
	}
}

func (s *Server) userNames() []string {
	s.umu.RLock()
	names := make([]string, 0, len(s.users))
	for n := range s.users {
		names = append(names, n)
	}
	s.umu.RUnlock()
	sort.Strings(names)
	return names
}

// aclCat answers ACL CAT: the categories, or the commands of one.
func aclCat(cn *conn, args [][]byte) {
	o := &cn.out
	if len(args) == 2 {
		o.arrayHeader(len(aclCategoryNames))
		for _, c := range aclCategoryNames {
			o.bulkString(c)
		}
		return
	}
	m, ok := aclCategory(string(args[2]))
	if !ok {
		cn.fail("Unknown category '" + sanitize(args[2]) + "'")
		return
	}
	var names []string
	for _, e := range aclEntries {
		if e.cats&m != 0 {
			names = append(names, e.name)
		}
	}
	o.arrayHeader(len(names))
	for _, n := range names {
		o.bulkString(n)
	}
}

func aclGetUser(cn *conn, name string) {
	u := cn.srv.user(name)
	o := &cn.out
	if u == nil {
		o.null()
		return
	}
	r := u.rules.Load()
	o.mapHeader(6)
	o.bulkString("flags")
	f := r.flags()
	o.setHeader(len(f))
	for _, x := range f {
		o.bulkString(x)
	}
	o.bulkString("passwords")
	o.arrayHeader(len(r.passwords))
	for _, p := range r.passwords {
		o.bulkString(p)
	}
	o.bulkString("commands")
	o.bulkString(r.describeCommands())
	o.bulkString("keys")
	o.bulkString(r.keysString())
	o.bulkString("channels")
	o.bulkString(r.channelsString())
	o.bulkString("selectors")
	o.arrayHeader(0)
}

// aclSetUser creates or changes a user: every modifier applies to a copy
// of its rules, which replace the user's only when all are valid.
func aclSetUser(cn *conn, args [][]byte) {
	s := cn.srv
	name := string(args[0])
	if hasSpaces(name) {
		cn.fail("Usernames can't contain spaces or null characters")
		return
	}
	s.umu.Lock()
	defer s.umu.Unlock()
	u := s.users[name]
	r := &aclRules{} // a new user: off, no password, no keys, no channels, -@all
	if u != nil {
		r = u.rules.Load().clone()
	}
	for _, a := range args[1:] {
		if e := r.apply(string(a)); e != aclOK {
			cn.fail("Error in ACL SETUSER modifier '" + sanitize(a) + "': " + string(e))
			return
		}
	}
	if u == nil {
		s.users[name] = newUser(name, r)
	} else {
		u.rules.Store(r)
	}
	cn.out.simple("OK")
}

// aclDelUser deletes users; their connections close at their next command.
func aclDelUser(cn *conn, args [][]byte) {
	s := cn.srv
	for _, a := range args {
		if string(a) == "default" {
			cn.fail("The 'default' user cannot be removed")
			return
		}
	}
	s.umu.Lock()
	n := 0
	for _, a := range args {
		if u := s.users[string(a)]; u != nil {
			r := u.rules.Load().clone()
			r.deleted = true
			u.rules.Store(r)
			delete(s.users, string(a))
			n++
		}
	}
	s.umu.Unlock()
	cn.out.int(int64(n))
}
