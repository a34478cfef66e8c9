package resp

import (
	"strings"
	"testing"
)

// aclCases run on one connection to each server: every reply must match
// Redis's byte for byte.
var aclCases = []string{
	"ACL SETUSER alice", "ACL GETUSER alice", "ACL LIST", "ACL USERS",
	"ACL SETUSER bob on >pw +@read ~*", "ACL GETUSER bob",
	"ACL SETUSER bob -@all +@read +@all -@read", "ACL GETUSER bob",
	"ACL SETUSER bob +@all -@write", "ACL GETUSER bob",
	"ACL SETUSER bob reset", "ACL GETUSER bob", "ACL SETUSER bob nopass", "ACL GETUSER bob",
	"ACL SETUSER bob resetpass", "ACL GETUSER bob", "ACL SETUSER bob +@foo", "ACL SETUSER bob +nosuchcommand",
	"ACL SETUSER bob xyz", "ACL SETUSER bob %X~k", "ACL GETUSER nobody", "ACL DELUSER bob nobody", "ACL DELUSER default",
	"ACL DELUSER alice default", "ACL GETUSER alice", "ACL CAT", "ACL CAT nope", "ACL CAT a b", "ACL GETUSER default",
	"ACL SETUSER c ~foo* ~bar &* on nopass", "ACL GETUSER c", "ACL LIST",
	"ACL SETUSER d >a >b <a #0123", "ACL GETUSER d",
	"ACL SETUSER d #6ca13d52ca70c883e0f0bb101e425a89e8624de51db2d2392593af6a84118090", "ACL GETUSER d",
	"ACL SETUSER d !6ca13d52ca70c883e0f0bb101e425a89e8624de51db2d2392593af6a84118090", "ACL SETUSER d <zzz",
	"ACL SETUSER d !zz", "ACL SETUSER d #6CA13D52CA70C883E0F0BB101E425A89E8624DE51DB2D2392593AF6A84118090",
	"ACL SETUSER d +@read|get", "ACL SETUSER d allkeys allcommands allchannels", "ACL GETUSER d",
	"ACL SETUSER d resetkeys resetchannels nocommands", "ACL GETUSER d",
	"ACL SETUSER e on >pw reset >x ~k* +@read", "ACL LIST",
	"ACL SETUSER f on nopass +@all -@all", "ACL GETUSER f", "ACL SETUSER g on nopass +@READ", "ACL GETUSER g",
	"ACL SETUSER g -@read", "ACL GETUSER g", "ACL SETUSER h on nopass +get +set -get", "ACL GETUSER h",
	"ACL SETUSER g ~a ~a allkeys ~b", "ACL GETUSER g", "ACL SETUSER g resetkeys ~b allkeys", "ACL GETUSER g",
	"ACL SETUSER g &x &x allchannels &y", "ACL SETUSER g resetchannels &x &x &y", "ACL GETUSER g",
	"ACL SETUSER g off on skip-sanitize-payload", "ACL GETUSER g", "ACL SETUSER g sanitize-payload clearselectors", "ACL GETUSER g",
	"ACL SETUSER g ~a\tb", "ACL SETUSER g ''", "ACL GETUSER g", "ACL SETUSER g >p >p", "ACL GETUSER g",
	"ACL SETUSER i on nopass +@all -@admin", "ACL GETUSER i", "ACL SETUSER j on nopass -@all +@list +@hash", "ACL GETUSER j",
	"ACL SETUSER k on nopass +@all -@dangerous", "ACL GETUSER k",
	"ACL USERS", "ACL LIST", "ACL DELUSER c d e f g h i j k", "ACL USERS", "ACL DELUSER", "ACL GETUSER", "ACL SETUSER",
	"ACL NOSUCH", "ACL WHOAMI",
}

func TestDifferentialACL(t *testing.T) {
	p, ts, rs := newDiffPair(t)
	p.soft = true
	for i, line := range aclCases {
		p.check(t, "acl #"+itoa(i), splitArgs(line)...)
	}
	for _, rc := range []*rawConn{p.ours, p.redis} { // the replies hold the connection id
		if _, err := rc.do("HELLO", "3"); err != nil {
			t.Fatal(err)
		}
	}
	p.check(t, "acl resp3", "ACL", "GETUSER", "default")
	p.check(t, "acl resp3", "ACL", "GETUSER", "nobody")
	p.check(t, "acl resp3", "ACL", "CAT")
	for _, rc := range []*rawConn{p.ours, p.redis} {
		if _, err := rc.do("HELLO", "2"); err != nil {
			t.Fatal(err)
		}
	}

	// What the users may do, on connections of their own.
	setup := []string{
		"ACL SETUSER ro on >rpw ~* +@read", "ACL SETUSER rw on >wpw ~app:* +@all -@admin",
		"ACL SETUSER none on >npw", "ACL SETUSER off off >opw +@all ~*", "ACL SETUSER np on nopass +get ~*",
		"SET app:1 v", "SET other v",
	}
	for i, line := range setup {
		p.check(t, "setup #"+itoa(i), splitArgs(line)...)
	}
	for _, c := range []struct {
		user, pass string
		cmds       []string
	}{
		{"ro", "rpw", []string{"GET app:1", "GET other", "SET app:1 w", "MGET app:1 other", "LRANGE other 0 -1", "FLUSHALL", "ACL WHOAMI", "ACL CAT", "ACL LIST", "PING", "MULTI", "SET a b", "EXEC"}},
		{"rw", "wpw", []string{"GET app:1", "GET other", "SET app:2 w", "MSET app:3 x other y", "DEL app:1", "FLUSHALL", "CONFIG GET timeout", "ACL WHOAMI", "ACL SETUSER x"}},
		{"none", "npw", []string{"GET app:1", "PING", "ACL WHOAMI"}},
		{"np", "anything", []string{"GET other", "SET other x"}},
	} {
		q := &diffPair{ours: dialRaw(t, ts.addr), redis: dialRaw(t, rs.addr), soft: true}
		q.check(t, c.user, "AUTH", c.user, "wrong")
		q.check(t, c.user, "AUTH", c.user, c.pass)
		for _, line := range c.cmds {
			q.check(t, c.user, splitArgs(line)...)
		}
	}
	q := &diffPair{ours: dialRaw(t, ts.addr), redis: dialRaw(t, rs.addr), soft: true}
	q.check(t, "off", "AUTH", "off", "opw")
	q.check(t, "off", "HELLO", "2", "AUTH", "off", "opw")
	// A change applies to a connection already authenticated.
	q.check(t, "change", "AUTH", "ro", "rpw")
	q.check(t, "change", "GET", "other")
	p.check(t, "change", "ACL", "SETUSER", "ro", "-get")
	q.check(t, "change", "GET", "other")
	q.check(t, "change", "LRANGE", "other", "0", "-1")
}

// TestACLCat: each category lists the commands of this server that
// Redis lists in it (Redis lists more: it has more commands).
func TestACLCat(t *testing.T) {
	p, _, _ := newDiffPair(t)
	for _, cat := range []string{"read", "write", "list", "hash", "string", "keyspace", "connection", "transaction", "blocking", "admin", "fast", "dangerous"} {
		want, _ := p.redis.do("ACL", "CAT", cat)
		got, _ := p.ours.do("ACL", "CAT", cat)
		redis := map[string]bool{}
		for _, n := range bulkItems(want) {
			redis[n] = true
			if i := strings.IndexByte(n, '|'); i > 0 { // client|list: our CLIENT is one command
				redis[n[:i]] = true
			}
		}
		ours := bulkItems(got)
		if len(ours) == 0 {
			t.Errorf("ACL CAT %s: nothing", cat)
		}
		for _, n := range ours {
			if !redis[n] {
				t.Errorf("ACL CAT %s: %s is not in Redis's", cat, n)
			}
		}
		for n := range redis {
			if c := commands[n]; c != nil && n != "acl" && !aclContainers[n] && !contains(ours, n) {
				t.Errorf("ACL CAT %s: Redis lists %s, we do not", cat, n)
			}
		}
	}
}

// bulkItems returns the bulk strings of an array reply.
func bulkItems(r string) []string {
	lines := strings.Split(r, "\r\n")
	var out []string
	for i := 1; i+1 < len(lines); i += 2 {
		out = append(out, lines[i+1])
	}
	return out
}

// FuzzACLSetUser applies arbitrary SETUSER modifiers: none may panic, and
// the rules a user ends with, described as ACL LIST does, must rebuild
// the same rules (Redis's own check of its description).
func FuzzACLSetUser(f *testing.F) {
	for _, s := range []string{
		"on >pw +@read ~*", "+@all -@read +get -set", "reset nopass resetpass", "~a* ~b &x &* allchannels",
		"#6ca13d52ca70c883e0f0bb101e425a89e8624de51db2d2392593af6a84118090 <pw !00", "-@all +@list +@hash -lpush +acl|whoami",
		"+@all -@dangerous +keys", "skip-sanitize-payload allkeys resetkeys ~k +@READ -@write +@admin -config",
		"%R~x (+get) +get|x +@nope", "allcommands nocommands +@fast -@slow +@blocking",
	} {
		f.Add(s)
	}
	aclTable()
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 2048 {
			return
		}
		r := &aclRules{}
		for _, op := range strings.Fields(in) {
			_ = r.apply(op)
		}
		d := r.describe()
		back := &aclRules{}
		for _, op := range strings.Fields(d) {
			if e := back.apply(op); e != aclOK {
				t.Fatalf("%q: describe %q: %q: %s", in, d, op, e)
			}
		}
		if back.cmds != r.cmds || back.describe() != d {
			t.Fatalf("%q: describe %q rebuilds %q", in, d, back.describe())
		}
	})
}

// TestACLLiveChanges: ACL SETUSER applies to a connection already
// authenticated as the user; ACL DELUSER closes it at its next command;
// a disabled user cannot authenticate.
func TestACLLiveChanges(t *testing.T) {
	ts := newTestServer(t, Config{})
	admin, c := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	steps := []struct {
		rc        *rawConn
		cmd, want string
	}{
		{admin, "ACL SETUSER u on >p ~* +@all", "+OK\r\n"},
		{c, "AUTH u p", "+OK\r\n"},
		{c, "SET k v", "+OK\r\n"},
		{admin, "ACL SETUSER u -set", "+OK\r\n"},
		{c, "SET k v", "-NOPERM this user has no permissions to run the 'set' command\r\n"},
		{c, "GET k", "$1\r\nv\r\n"},
		{admin, "ACL SETUSER u resetkeys ~x*", "+OK\r\n"},
		{c, "GET k", "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"},
		{c, "GET xk", "$-1\r\n"},
		{admin, "ACL SETUSER u off", "+OK\r\n"},
		{c, "GET xk", "$-1\r\n"}, // as Redis: off refuses new authentications only
		{c, "AUTH u p", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{admin, "ACL DELUSER u", ":1\r\n"},
	}
	for i, s := range steps {
		if got, err := s.rc.do(splitArgs(s.cmd)...); err != nil || got != s.want {
			t.Fatalf("#%d %s: %q %v, want %q", i, s.cmd, got, err, s.want)
		}
	}
	if got, err := c.do("GET", "xk"); err == nil {
		t.Fatalf("a deleted user's connection answered %q", got)
	}
	if st := ts.srv.Stats(); st.ACLDenied != 2 {
		t.Fatalf("ACLDenied %d, want 2", st.ACLDenied)
	}
}
