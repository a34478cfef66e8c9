package resp

import (
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The differential tests send the same commands to this server and to a
// real redis-server and compare the replies byte for byte.

// diffPair is one connection to each server.
type diffPair struct {
	ours, redis *rawConn
	soft        bool // report a difference and go on (written cases)
}

func newDiffPair(t *testing.T) (*diffPair, *testServer, *redisServer) {
	rs := startRedis(t)
	ts := newTestServer(t, Config{})
	return &diffPair{ours: dialRaw(t, ts.addr), redis: dialRaw(t, rs.addr)}, ts, rs
}

// unordered commands answer collections in an order that may differ:
// their array replies are compared sorted.
// (HGETALL by pairs): a hash of large values is a hashtable in both.
var unordered = map[string]int{"keys": 1, "hkeys": 1, "hvals": 1, "hgetall": 2}

// check sends args to both servers and fails the test when the replies
// differ; it returns Redis's reply.
func (p *diffPair) check(t *testing.T, ctx string, args ...string) string {
	t.Helper()
	want, err1 := p.redis.do(args...)
	got, err2 := p.ours.do(args...)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: %q: redis err %v, ours err %v (redis %q, ours %q)", ctx, args, err1, err2, want, got)
	}
	if g := unordered[strings.ToLower(args[0])]; g > 0 {
		want, got = sortedArray(want, g), sortedArray(got, g)
	}
	if want != got {
		if p.soft {
			t.Errorf("%s: %q:\nredis %q\nours  %q", ctx, args, want, got)
		} else {
			t.Fatalf("%s: %q:\nredis %q\nours  %q", ctx, args, want, got)
		}
	}
	return want
}

// sortedArray sorts the lines of an array reply of bulk strings (enough
// for KEYS), in groups of group elements.
func sortedArray(r string, group int) string {
	if !strings.HasPrefix(r, "*") && !strings.HasPrefix(r, "%") {
		return r
	}
	lines := strings.Split(r, "\r\n")
	var items []string
	for i := 1; i+2*group-1 < len(lines); i += 2 * group {
		items = append(items, strings.Join(lines[i:i+2*group], "\r\n"))
	}
	sort.Strings(items)
	return lines[0] + "\r\n" + strings.Join(items, "\r\n") + "\r\n"
}

// splitArgs splits a written command line on spaces; ” is an empty
// argument.
func splitArgs(line string) []string {
	f := strings.Fields(line)
	for i, a := range f {
		if a == "''" {
			f[i] = ""
		}
	}
	return f
}

// diffCases are written command sequences, run from an empty server.
var diffCases = map[string][]string{
	"types": {
		"SET s x", "RPUSH s y", "LPUSH s y", "LRANGE s 0 -1", "HSET s f v", "HGET s f", "TYPE s",
		"RPUSH l x", "GET l", "APPEND l x", "INCR l", "STRLEN l", "GETRANGE l 0 1", "TYPE l", "HGETALL l",
		"HSET h f v", "GET h", "LLEN h", "LPOP h", "TYPE h", "TYPE nothing", "MGET s l h nothing",
		"SET s x GET", "GETSET l z", "GETDEL h",
	},
	"set options": {
		"SET k v", "SET k v2 NX", "GET k", "SET k v3 XX", "GET k", "SET n v XX", "GET n", "SET n v NX",
		"SET k v NX XX", "SET k v EX 10 PX 100", "SET k v EX 0", "SET k v EX -1", "SET k v EX abc", "SET k v PX 0",
		"SET k v EX 100", "TTL k", "SET k v KEEPTTL", "TTL k", "SET k v", "TTL k", "SET k v EX 100 KEEPTTL",
		"SET k v GET", "SET k v5 NX GET", "SET nope v XX GET", "GET nope", "SET k v EXAT 99999999999", "TTL k",
		"SET k v PXAT 1", "GET k", "SET k v EX 9223372036854775807", "SET k v PX 9223372036854775807",
		"SET k v ex 100 nx", "SET k", "SET k v BOGUS", "SET k v EX", "set K v Px 5000", "PTTL nope",
	},
	"incr": {
		"INCR i", "INCR i", "INCRBY i 10", "DECR i", "DECRBY i 5", "GET i", "INCRBY i abc", "INCRBY i 1.5",
		"SET i 9223372036854775807", "INCR i", "SET i -9223372036854775808", "DECR i",
		"DECRBY i -9223372036854775808", "SET i ' 1'", "SET i 01", "INCR i", "SET i -0", "INCR i", "SET i +1", "INCR i",
		"SET i 12345678901234567890", "INCR i", "SET i -1", "INCR i", "SET f 1.5", "INCR f", "INCRBYFLOAT f 1",
		"INCRBYFLOAT f 0.5", "INCRBYFLOAT f abc", "INCRBYFLOAT g 10", "INCRBYFLOAT g -3", "GET g", "SET e 1e3",
		"INCRBYFLOAT e 1", "INCRBY i 9223372036854775808", "INCRBY i -9223372036854775809",
		// Long double arithmetic and formatting (%.17Lf, zeros trimmed).
		"INCRBYFLOAT d 0.1", "INCRBYFLOAT d 0.1", "INCRBYFLOAT d 0.1", "INCRBYFLOAT d -0.3", "GET d",
		"INCRBYFLOAT d 1e400", "INCRBYFLOAT d -1e400", "INCRBYFLOAT d 3.0e3", "INCRBYFLOAT d 1.5e-5",
		"INCRBYFLOAT d 5.0e-18", "INCRBYFLOAT d 12345678901234567890.123", "INCRBYFLOAT d inf",
		"INCRBYFLOAT d 1e5000", "INCRBYFLOAT d 1.18e4932", "INCRBYFLOAT d 1.18e4932", "GET d",
		"SET d 0.1", "INCRBYFLOAT d 0.2", "INCRBYFLOAT d -0.30000000000000000", "INCRBYFLOAT d 2.5e-20",
		"HINCRBYFLOAT hd f 0.1", "HINCRBYFLOAT hd f 0.2", "HINCRBYFLOAT hd f 1e30", "HGET hd f",
		"INCRBYFLOAT u 1e-5000", "INCRBYFLOAT u -0", "INCRBYFLOAT u 0x10", "INCRBYFLOAT u 1e308", "INCRBYFLOAT u 1e308",
		"INCRBYFLOAT u -2e308", "INCRBYFLOAT u 1e-4940", "INCRBYFLOAT u .5", "INCRBYFLOAT u 5.", "INCRBYFLOAT u +1",
		"INCRBYFLOAT u 1e", "INCRBYFLOAT u 1_0", "INCRBYFLOAT u nan", "INCRBYFLOAT u 3.14159265358979323846264338",
	},
	"strings": {
		"APPEND a hello", "APPEND a ' world'", "GET a", "STRLEN a", "STRLEN none", "GETRANGE a 0 4",
		"GETRANGE a -5 -1", "GETRANGE a 5 2", "GETRANGE a -1 -5", "GETRANGE a 0 100", "GETRANGE a -100 2",
		"GETRANGE none 0 10", "GETRANGE a x 1", "SETRANGE a 6 WORLD", "GET a", "SETRANGE b 3 xy", "GET b",
		"SETRANGE c 0 ''", "EXISTS c", "SETRANGE a -1 x", "SETRANGE a 1 ''", "SETNX a x", "SETNX d x", "GET d",
		"SETEX e 100 v", "TTL e", "SETEX e 0 v", "SETEX e -5 v", "SETEX e x v", "PSETEX f 100000 v", "TTL f",
		"GETDEL a", "GETDEL a", "GETEX f PERSIST", "TTL f", "GETEX f EX 100", "TTL f", "GETEX f PX 100 EX 1",
		"GETEX nope EX 10", "GETEX f", "GETEX f BOGUS", "MSET x 1 y 2", "MGET x y z", "MSET x", "MSETNX x 1 z 3",
		"MSETNX z 3 w 4", "MGET z w", "GETSET x 5", "GETSET nope 5", "GET nope", "ECHO hi", "PING", "PING hi",
		"PING a b", "SETRANGE big 1000 x", "STRLEN big", "SETRANGE big 536870912 x", "APPEND big y", "GETRANGE big 998 1001",
	},
	"keyspace": {
		"SET a 1", "SET b 2", "RPUSH c x", "DEL a a b nope", "EXISTS a b c c", "UNLINK c", "DBSIZE",
		"SET k v", "RENAME k k2", "GET k2", "RENAME nope x", "RENAME k2 k2", "RENAMENX k2 k2", "SET k3 v",
		"RENAMENX k2 k3", "RENAMENX k2 k4", "EXPIRE k4 100", "TTL k4", "RENAME k4 k5", "TTL k5", "PERSIST k5",
		"PERSIST k5", "TTL k5", "TTL nope", "PTTL k5", "EXPIRE k5 100 NX", "EXPIRE k5 200 NX", "TTL k5",
		"EXPIRE k5 50 XX", "TTL k5", "EXPIRE k5 10 GT", "EXPIRE k5 500 GT", "TTL k5", "EXPIRE k5 600 LT", "TTL k5",
		"EXPIRE k5 1 NX XX", "EXPIRE k5 1 GT LT", "EXPIRE k5 1 BOGUS", "EXPIRE k5 x", "EXPIRE nope 10",
		"EXPIRE k5 -1", "EXISTS k5", "SET k6 v", "PEXPIRE k6 100000", "TTL k6", "EXPIREAT k6 99999999999",
		"TTL k6", "EXPIRETIME k6", "PEXPIRETIME k6", "EXPIRETIME k3", "EXPIREAT k6 1", "GET k6", "SET k7 v",
		"PEXPIREAT k7 99999999999000", "PEXPIRETIME k7", "EXPIRE k7 9223372036854775807", "PEXPIRE k7 9223372036854775807",
		"KEYS *", "KEYS k?", "KEYS k[2-3]", "KEYS k[^2]", "KEYS *3", "KEYS \\k*", "TYPE k3", "FLUSHDB", "DBSIZE",
		"SET x y", "FLUSHALL", "DBSIZE", "FLUSHALL BOGUS", "FLUSHALL ASYNC",
	},
	"select": {
		"SET k db0", "SELECT 1", "GET k", "SET k db1", "SELECT 15", "SET k db15", "DBSIZE", "SELECT 16", "SELECT -1",
		"SELECT x", "SELECT 0", "GET k", "SELECT 1", "GET k", "FLUSHDB", "SELECT 0", "GET k", "SELECT 15", "GET k",
		"FLUSHALL", "GET k", "SELECT 0",
	},
	"lists": {
		"RPUSH l a b c d e", "LPUSH l z y", "LRANGE l 0 -1", "LRANGE l 0 9223372036854775807",
		"LRANGE l -9223372036854775808 1", "LRANGE l 5 2", "LRANGE l -3 -1", "LRANGE l 100 200", "LRANGE l x 1",
		"LRANGE nope 0 -1", "LLEN l", "LLEN nope", "LINDEX l 0", "LINDEX l -1", "LINDEX l 100", "LINDEX l x",
		"LINDEX nope 0", "LSET l 0 Z", "LSET l -1 E", "LSET l 100 x", "LSET nope 0 x", "LRANGE l 0 -1",
		"LPOP l", "RPOP l", "LPOP l 2", "RPOP l 0", "LPOP l -1", "LPOP l x", "LPOP nope", "LPOP nope 2",
		"RPOP l 100", "EXISTS l", "RPUSH m a b a c a", "LREM m 2 a", "LRANGE m 0 -1", "RPUSH m a a",
		"LREM m -1 a", "LRANGE m 0 -1", "LREM m 0 a", "LRANGE m 0 -1", "LREM m x a", "LREM nope 0 a",
		"LINSERT m BEFORE c X", "LINSERT m AFTER c Y", "LINSERT m AFTER nope Y", "LINSERT m MIDDLE c Y",
		"LINSERT nope BEFORE a b", "LRANGE m 0 -1", "LTRIM m 1 2", "LRANGE m 0 -1", "LTRIM m 5 10", "EXISTS m",
		"RPUSH p a b c a b c", "LPOS p b", "LPOS p b RANK 2", "LPOS p b RANK -1", "LPOS p b COUNT 0",
		"LPOS p b COUNT 1", "LPOS p x", "LPOS p x COUNT 2", "LPOS p b RANK 0", "LPOS p b COUNT -1",
		"LPOS p b MAXLEN 1", "LPOS p b MAXLEN 2", "LPOS p b RANK -2 COUNT 2", "LPOS nope a", "LPOS nope a COUNT 1",
		"LPOS p a BOGUS 1", "LPOS p a RANK", "LMOVE p q LEFT RIGHT", "LMOVE p q RIGHT LEFT", "LRANGE q 0 -1",
		"LMOVE p p LEFT RIGHT", "LRANGE p 0 -1", "LMOVE nope q LEFT LEFT", "LMOVE p q UP DOWN", "RPOPLPUSH p q",
		"LRANGE q 0 -1", "SET s x", "LMOVE p s LEFT LEFT", "LMOVE s p LEFT LEFT", "RPUSH one x", "LMOVE one one LEFT LEFT",
		"LRANGE one 0 -1", "RPUSHX nope a", "LPUSHX nope a", "RPUSHX one a b", "LPUSHX one c", "LRANGE one 0 -1",
		"RPUSH", "LPUSH l", "BLPOP p 0.01", "BLPOP nope 0.01", "BRPOP nope p 0.01", "BLPOP p -1", "BLPOP p x",
		"BLMOVE p q LEFT RIGHT 0.01", "BLMOVE nope q LEFT RIGHT 0.01", "BRPOPLPUSH q p 0.01", "BRPOPLPUSH nope p 0.01",
		"BLPOP s 0.01",
	},
	"hashes": {
		"HSET h a 1 b 2 c 3", "HSET h a 10 d 4", "HGETALL h", "HGET h a", "HGET h x", "HGET nope a",
		"HMGET h a x b", "HMGET nope a", "HKEYS h", "HVALS h", "HLEN h", "HLEN nope", "HEXISTS h a", "HEXISTS h x",
		"HDEL h a x", "HDEL h a", "HGETALL h", "HSTRLEN h b", "HSTRLEN h x", "HSETNX h b 5", "HSETNX h e 5",
		"HINCRBY h b 5", "HINCRBY h n 1", "HINCRBY h e x", "HSET h s abc", "HINCRBY h s 1",
		"HINCRBY h b 9223372036854775807", "HINCRBYFLOAT h f 1.5", "HINCRBYFLOAT h f x", "HINCRBYFLOAT h s 1",
		"HMSET h x 1 y 2", "HGETALL h", "HSET h a", "HSET h", "HDEL h b c d e n s f x y", "EXISTS h",
		"HGETALL nope", "HKEYS nope", "HSCAN h 0", "HSET h2 a 1 b 2", "HSCAN h2 0", "HSCAN h2 0 MATCH a",
		"HSCAN h2 0 COUNT 0", "HSCAN h2 x",
	},
	"transactions": {
		"MULTI", "SET a 1", "INCR a", "GET a", "EXEC", "MULTI", "MULTI", "SET b 1", "DISCARD", "GET b",
		"EXEC", "DISCARD", "MULTI", "SET a 2", "NOSUCHCOMMAND", "EXEC", "GET a", "MULTI", "GET", "EXEC",
		"MULTI", "SET s x", "LPUSH s y", "GET s", "EXEC", "WATCH a", "MULTI", "WATCH b", "EXEC", "UNWATCH",
		"MULTI", "BLPOP nope 0", "EXEC", "MULTI", "SELECT 1", "SET a in1", "SELECT 0", "EXEC", "GET a",
	},
	"errors": {
		"NOSUCH", "nosuch a b c d", "GET", "GET a b", "CLIENT", "CLIENT BOGUS", "CLIENT GETNAME", "CLIENT SETNAME x",
		"CLIENT GETNAME", "CLIENT SETNAME 'a b'", "CLIENT SETNAME ''", "CLIENT GETNAME", "SET", "HELLO 4",
		"HELLO x", "AUTH x", "AUTH a b", "AUTH a b c", "SCAN x", "DBSIZE x", "EXPIRE", "TTL", "CONFIG GET maxmemory",
		"CONFIG GET maxmemory-policy", "CONFIG GET databases", "CONFIG GET save", "CONFIG GET appendonly",
	},
}

func TestDifferentialCases(t *testing.T) {
	names := make([]string, 0, len(diffCases))
	for n := range diffCases {
		names = append(names, n)
	}
	sort.Strings(names)
	p, _, _ := newDiffPair(t)
	p.soft = true
	for _, name := range names {
		p.check(t, name, "FLUSHALL")
		for i, line := range diffCases[name] {
			p.check(t, name+" #"+strconv.Itoa(i), splitArgs(line)...)
		}
	}
}

// TestDifferentialWatch: a watched key changed by another connection
// aborts EXEC on both servers; a write that changes nothing (SET NX of a
// key that exists, SET XX, SETNX, MSETNX, DEL of an absent key) does not.
func TestDifferentialWatch(t *testing.T) {
	p, ts, rs := newDiffPair(t)
	other := &diffPair{ours: dialRaw(t, ts.addr), redis: dialRaw(t, rs.addr)}
	for _, step := range []struct {
		p    *diffPair
		line string
	}{
		{p, "SET w 1"}, {p, "WATCH w"}, {other, "SET w 2"}, {p, "MULTI"}, {p, "SET w 3"}, {p, "EXEC"}, {p, "GET w"},
		{p, "WATCH w"}, {other, "GET w"}, {p, "MULTI"}, {p, "SET w 4"}, {p, "EXEC"}, {p, "GET w"},
		{p, "WATCH w x"}, {other, "FLUSHALL"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH nope"}, {other, "SET nope 1"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH l"}, {other, "RPUSH l a"}, {p, "UNWATCH"}, {p, "MULTI"}, {p, "LPOP l"}, {p, "EXEC"},
		{p, "SET w 1"}, {p, "WATCH w nope"}, {other, "SET w 2 NX"}, {other, "SET nope 1 XX"}, {other, "SETNX w 3"},
		{other, "MSETNX w 4 nope 5"}, {other, "DEL nope"}, {other, "UNLINK nope gone"}, {p, "SET nope 6 XX GET"},
		{p, "MULTI"}, {p, "GET w"}, {p, "EXEC"},
		{p, "WATCH w"}, {other, "SET w 1"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH w"}, {other, "DEL nope w"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH w"}, {other, "MSET x 1 w 2"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH w"}, {other, "SETNX w 3"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH w"}, {p, "SET w 4 XX"}, {p, "MULTI"}, {p, "GET w"}, {p, "EXEC"},
		// No-ops of the other commands that mark only what they change.
		{p, "RPUSH l a b"}, {p, "HSET h f 1"}, {p, "SET e 1"},
		{p, "WATCH nope l h e"}, {other, "EXPIRE nope 10"}, {other, "PEXPIRE e 100000 XX"}, {other, "PERSIST e"},
		{other, "PERSIST nope"}, {other, "LPUSHX nope a"}, {other, "RPUSHX nope a"}, {other, "LPOP nope"},
		{other, "RPOP l 0"}, {other, "LREM l 0 zz"}, {other, "HSETNX h f 2"}, {other, "HDEL h g"},
		{other, "HDEL nope f"}, {other, "GETDEL nope"}, {p, "MULTI"}, {p, "LRANGE l 0 -1"}, {p, "EXEC"},
		{p, "WATCH e"}, {other, "EXPIRE e 100"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH e"}, {other, "PERSIST e"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH l"}, {other, "RPUSHX l c"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH l"}, {other, "LPOP l 1"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH l"}, {other, "LREM l 0 b"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH h"}, {other, "HSETNX h g 2"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH h"}, {other, "HDEL h x g"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH e"}, {other, "GETDEL e"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
		{p, "WATCH l"}, {other, "EXPIRE l -1"}, {p, "MULTI"}, {p, "PING"}, {p, "EXEC"},
	} {
		step.p.check(t, "watch", splitArgs(step.line)...)
	}
}

// TestDifferentialRESP3: HELLO 3 switches the reply types.
func TestDifferentialRESP3(t *testing.T) {
	p, _, _ := newDiffPair(t)
	p.redis.do("HELLO", "3")
	p.ours.do("HELLO", "3")
	for _, line := range []string{
		"GET nope", "SET k v", "GET k", "HSET h a 1 b 2", "HGETALL h", "HGETALL nope", "LPOP nope 2", "LPOP nope",
		"MGET k nope", "BLPOP nope 0.01", "CONFIG GET maxmemory", "RPUSH l a", "LRANGE l 0 -1", "HMGET h a x",
		"MULTI", "GET nope", "EXEC", "WATCH k", "SET k 2", "MULTI", "EXEC", "INCRBYFLOAT f 1.5",
	} {
		p.check(t, "resp3", splitArgs(line)...)
	}
	// HELLO answers the connection's id, which differs.
	id := regexp.MustCompile(`id\r\n:[0-9]+`)
	for _, v := range []string{"2", "3", "2"} {
		want, _ := p.redis.do("HELLO", v)
		got, _ := p.ours.do("HELLO", v)
		if w, g := id.ReplaceAllString(want, "id"), id.ReplaceAllString(got, "id"); w != g {
			t.Fatalf("HELLO %s:\nredis %q\nours  %q", v, want, got)
		}
		p.check(t, "resp"+v, "GET", "nope")
	}
}

// genCommand returns a random command over a few keys of every type.
func genCommand(r *rand.Rand) []string {
	keys := []string{"a", "b", "c", "l", "h"}
	k := func() string { return keys[r.IntN(len(keys))] }
	ints := []string{"0", "1", "-1", "2", "-2", "3", "10", "-10", "100", "x", "9223372036854775807", "-9223372036854775808"}
	i := func() string { return ints[r.IntN(len(ints))] }
	vals := []string{"v", "1", "-5", "", "abc", "10", strings.Repeat("x", 600)}
	v := func() string { return vals[r.IntN(len(vals))] }
	fields := []string{"f", "g", "h"}
	f := func() string { return fields[r.IntN(len(fields))] }
	switch r.IntN(46) {
	case 0:
		return []string{"SET", k(), v()}
	case 1:
		opts := [][]string{{"NX"}, {"XX"}, {"GET"}, {"EX", "100"}, {"PX", "100000"}, {"KEEPTTL"}, {"NX", "GET"}, {"XX", "EX", "50"}}
		return append([]string{"SET", k(), v()}, opts[r.IntN(len(opts))]...)
	case 2:
		return []string{"GET", k()}
	case 3:
		return []string{"INCR", k()}
	case 4:
		return []string{"INCRBY", k(), i()}
	case 5:
		return []string{"DECRBY", k(), i()}
	case 6:
		return []string{"APPEND", k(), v()}
	case 7:
		return []string{"STRLEN", k()}
	case 8:
		return []string{"GETRANGE", k(), i(), i()}
	case 9:
		return []string{"SETRANGE", k(), []string{"0", "1", "5", "-1"}[r.IntN(4)], v()}
	case 10:
		return []string{"GETSET", k(), v()}
	case 11:
		return []string{"GETDEL", k()}
	case 12:
		return []string{"SETNX", k(), v()}
	case 13:
		return []string{"MSETNX", k(), v(), k(), v()}
	case 14:
		return []string{"MGET", k(), k(), k()}
	case 15:
		return []string{"DEL", k(), k()}
	case 16:
		return []string{"EXISTS", k(), k()}
	case 17:
		return []string{"TYPE", k()}
	case 18:
		return []string{"EXPIRE", k(), []string{"100", "1000", "-1", "x"}[r.IntN(4)]}
	case 19:
		return []string{"TTL", k()}
	case 20:
		return []string{"PERSIST", k()}
	case 21:
		return []string{"RENAME", k(), k()}
	case 22:
		return []string{"LPUSH", k(), v(), v()}
	case 23:
		return []string{"RPUSH", k(), v()}
	case 24:
		return []string{"LPOP", k()}
	case 25:
		return []string{"RPOP", k(), i()}
	case 26:
		return []string{"LRANGE", k(), i(), i()}
	case 27:
		return []string{"LINDEX", k(), i()}
	case 28:
		return []string{"LSET", k(), i(), v()}
	case 29:
		return []string{"LREM", k(), i(), v()}
	case 30:
		return []string{"LTRIM", k(), i(), i()}
	case 31:
		return []string{"LINSERT", k(), []string{"BEFORE", "AFTER"}[r.IntN(2)], v(), v()}
	case 32:
		return []string{"LPOS", k(), v()}
	case 33:
		return []string{"LMOVE", k(), k(), "LEFT", "RIGHT"}
	case 34:
		return []string{"LLEN", k()}
	case 35:
		return []string{"HSET", k(), f(), v()}
	case 36:
		return []string{"HGET", k(), f()}
	case 37:
		return []string{"HGETALL", k()}
	case 38:
		return []string{"HDEL", k(), f()}
	case 39:
		return []string{"HINCRBY", k(), f(), i()}
	case 40:
		return []string{"HMGET", k(), f(), f()}
	case 41:
		return []string{"HLEN", k()}
	case 42:
		return []string{"BLPOP", k(), k(), "0.001"}
	case 43:
		return []string{"HSETNX", k(), f(), v()}
	case 44:
		return []string{"GETEX", k(), []string{"PERSIST", "EX", "EX"}[r.IntN(3)], "100"}[:3+r.IntN(2)]
	default:
		return []string{"DBSIZE"}
	}
}

// TestDifferentialRandom runs seeded random command sequences.
func TestDifferentialRandom(t *testing.T) {
	p, _, _ := newDiffPair(t)
	seqs, cmds := 40, 150
	if testing.Short() {
		seqs = 10
	}
	for seed := 0; seed < seqs; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 26))
		p.check(t, "flush", "FLUSHALL")
		for j := 0; j < cmds; j++ {
			args := genCommand(r)
			if args[0] == "GETEX" && len(args) == 3 && args[2] == "EX" {
				args = args[:2]
			}
			p.check(t, "seed "+strconv.Itoa(seed)+" #"+strconv.Itoa(j), args...)
		}
	}
}

// scanAll iterates SCAN (or HSCAN key) to the end on one server and
// returns what it returned, sorted (as pairs for HSCAN).
func scanAll(t *testing.T, rc *rawConn, group int, cmd ...string) []string {
	t.Helper()
	cursor := "0"
	var all []string
	for i := 0; i < 100000; i++ {
		args := []string{cmd[0]}
		if cmd[0] == "HSCAN" {
			args = append(args, cmd[1], cursor)
			args = append(args, cmd[2:]...)
		} else {
			args = append(args, cursor)
			args = append(args, cmd[1:]...)
		}
		r, err := rc.do(args...)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(r, "\r\n")
		if len(lines) < 4 || lines[0] != "*2" {
			t.Fatalf("%q: %q", args, r)
		}
		cursor = lines[2]
		for j := 4; j+group*2-1 < len(lines); j += 2 * group {
			all = append(all, strings.Join(lines[j:j+2*group], "|"))
		}
		if cursor == "0" {
			sort.Strings(all)
			return all
		}
	}
	t.Fatalf("%q did not finish", cmd)
	return nil
}

// TestDifferentialScan: a full SCAN / HSCAN iteration returns the same
// set of keys (fields) as Redis's, with MATCH, COUNT and TYPE; RANDOMKEY
// on an empty database and on one key.
func TestDifferentialScan(t *testing.T) {
	p, _, _ := newDiffPair(t)
	p.check(t, "randomkey", "RANDOMKEY")
	p.check(t, "randomkey", "SET", "only", "1")
	p.check(t, "randomkey", "RANDOMKEY")
	for i := 0; i < 300; i++ {
		k := "key:" + strconv.Itoa(i)
		switch i % 3 {
		case 0:
			p.check(t, "load", "SET", k, "v")
		case 1:
			p.check(t, "load", "RPUSH", k, "v")
		default:
			p.check(t, "load", "HSET", k, "f", "v")
		}
		p.check(t, "load", "HSET", "bighash", "field:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	for _, cmd := range [][]string{
		{"SCAN"}, {"SCAN", "COUNT", "7"}, {"SCAN", "MATCH", "key:1*"}, {"SCAN", "TYPE", "list"},
		{"SCAN", "MATCH", "key:*5", "COUNT", "1000", "TYPE", "hash"},
	} {
		want, got := scanAll(t, p.redis, 1, cmd...), scanAll(t, p.ours, 1, cmd...)
		if strings.Join(want, ",") != strings.Join(got, ",") {
			t.Fatalf("%q: redis %d items, ours %d", cmd, len(want), len(got))
		}
	}
	for _, cmd := range [][]string{{"HSCAN", "bighash"}, {"HSCAN", "bighash", "MATCH", "field:2?", "COUNT", "3"}} {
		want, got := scanAll(t, p.redis, 2, cmd...), scanAll(t, p.ours, 2, cmd...)
		if strings.Join(want, ",") != strings.Join(got, ",") {
			t.Fatalf("%q: redis %d items, ours %d", cmd, len(want), len(got))
		}
	}
	for _, line := range []string{"SCAN 0 COUNT 0", "SCAN 0 COUNT x", "SCAN 0 MATCH", "SCAN 0 BOGUS 1", "SCAN x", "HSCAN bighash 0 TYPE string"} {
		p.check(t, "scan errors", splitArgs(line)...)
	}
}
