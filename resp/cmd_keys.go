package resp

import (
	"hash/maphash"
	"math"
	"sort"
	"strconv"
)

func init() {
	register(
		&command{name: "del", arity: -2, flags: fWrite | fTouches, first: 1, last: -1, step: 1, group: "generic", summary: "Delete keys", fn: cmdDel},
		&command{name: "unlink", arity: -2, flags: fWrite | fFast | fTouches, first: 1, last: -1, step: 1, group: "generic", summary: "Delete keys", fn: cmdDel},
		&command{name: "exists", arity: -2, flags: fRead | fFast, first: 1, last: -1, step: 1, group: "generic", summary: "Count existing keys", fn: cmdExists},
		&command{name: "type", arity: 2, flags: fRead | fFast, first: 1, last: 1, step: 1, group: "generic", summary: "The type of a key", fn: cmdType},
		&command{name: "keys", arity: 2, flags: fRead, group: "generic", summary: "Keys matching a pattern", fn: cmdKeys},
		&command{name: "scan", arity: -2, flags: fRead, group: "generic", summary: "Iterate the keys", fn: cmdScan},
		&command{name: "randomkey", arity: 1, flags: fRead, group: "generic", summary: "A random key", fn: cmdRandomKey},
		&command{name: "rename", arity: 3, flags: fWrite, first: 1, last: 2, step: 1, group: "generic", summary: "Rename a key", fn: cmdRename},
		&command{name: "renamenx", arity: 3, flags: fWrite | fFast, first: 1, last: 2, step: 1, group: "generic", summary: "Rename a key if the new name is free", fn: cmdRename},
		&command{name: "expire", arity: -3, flags: fWrite | fFast | fTouches, first: 1, last: 1, step: 1, group: "generic", summary: "Set a key's time to live in seconds", fn: cmdExpire},
		&command{name: "pexpire", arity: -3, flags: fWrite | fFast | fTouches, first: 1, last: 1, step: 1, group: "generic", summary: "Set a key's time to live in milliseconds", fn: cmdExpire},
		&command{name: "expireat", arity: -3, flags: fWrite | fFast | fTouches, first: 1, last: 1, step: 1, group: "generic", summary: "Set a key's expiry as a Unix time in seconds", fn: cmdExpire},
		&command{name: "pexpireat", arity: -3, flags: fWrite | fFast | fTouches, first: 1, last: 1, step: 1, group: "generic", summary: "Set a key's expiry as a Unix time in milliseconds", fn: cmdExpire},
		&command{name: "ttl", arity: 2, flags: fRead | fFast, first: 1, last: 1, step: 1, group: "generic", summary: "A key's time to live in seconds", fn: cmdTTL},
		&command{name: "pttl", arity: 2, flags: fRead | fFast, first: 1, last: 1, step: 1, group: "generic", summary: "A key's time to live in milliseconds", fn: cmdTTL},
		&command{name: "expiretime", arity: 2, flags: fRead | fFast, first: 1, last: 1, step: 1, group: "generic", summary: "A key's expiry as a Unix time in seconds", fn: cmdTTL},
		&command{name: "pexpiretime", arity: 2, flags: fRead | fFast, first: 1, last: 1, step: 1, group: "generic", summary: "A key's expiry as a Unix time in milliseconds", fn: cmdTTL},
		&command{name: "persist", arity: 2, flags: fWrite | fFast | fTouches, first: 1, last: 1, step: 1, group: "generic", summary: "Remove a key's expiry", fn: cmdPersist},
	)
}

func cmdDel(cn *conn, args [][]byte) {
	ks, d := cn.srv.ks, cn.db()
	n := 0
	for _, k := range args[1:] {
		if ks.lookup(d, k) != nil && ks.del(d, string(k)) {
			cn.touched(k)
			n++
		}
	}
	cn.out.int(int64(n))
}

func cmdExists(cn *conn, args [][]byte) {
	n := 0
	for _, k := range args[1:] {
		if cn.srv.ks.lookup(cn.db(), k) != nil {
			n++
		}
	}
	cn.out.int(int64(n))
}

func cmdType(cn *conn, args [][]byte) {
	e := cn.srv.ks.lookup(cn.db(), args[1])
	if e == nil {
		cn.out.simple("none")
		return
	}
	cn.out.simple(e.k.String())
}

// live reports whether key k of d has not expired (no removal).
func live(d *db, k string, now int64) bool {
	t, ok := d.expires[k]
	return !ok || t > now
}

func cmdKeys(cn *conn, args [][]byte) {
	d := cn.db()
	now := nowMs()
	var keys []string
	all := string(args[1]) == "*"
	for k := range d.keys {
		if live(d, k, now) && (all || globMatch(args[1], []byte(k))) {
			keys = append(keys, k)
		}
	}
	cn.out.arrayHeader(len(keys))
	for _, k := range keys {
		cn.out.bulkString(k)
	}
}

func cmdRandomKey(cn *conn, _ [][]byte) {
	d := cn.db()
	now := nowMs()
	for k := range d.keys {
		if live(d, k, now) {
			cn.out.bulkString(k)
			return
		}
	}
	cn.out.null()
}

// scanBuckets is the number of hash buckets a SCAN cursor walks: a cursor
// is the next bucket; a key is returned by the call whose bucket range
// holds hash(key) mod scanBuckets, so a key present for the whole
// iteration is returned exactly once.
const scanBuckets = 1 << 16

var scanSeed = maphash.MakeSeed()

func scanBucket(k []byte) uint64 { return maphash.Bytes(scanSeed, k) % scanBuckets }

// scanArgs parses a SCAN-style cursor and options from args[from:].
type scanOpts struct {
	cursor uint64
	match  []byte
	count  int
	typ    string
}

func (cn *conn) scanArgs(args [][]byte, cur []byte, withType bool) (scanOpts, bool) {
	o := scanOpts{count: 10}
	c, err := strconv.ParseUint(string(cur), 10, 64)
	if err != nil { // strtoul, as Redis: a negative cursor wraps around
		v, err2 := strconv.ParseInt(string(cur), 10, 64)
		if err2 != nil {
			cn.fail("invalid cursor")
			return o, false
		}
		c = uint64(v)
	}
	o.cursor = c
	for i := 0; i < len(args); i++ {
		switch {
		case eq(args[i], "MATCH") && i+1 < len(args):
			o.match = args[i+1]
			i++
		case eq(args[i], "COUNT") && i+1 < len(args):
			v, ok := str2ll(args[i+1])
			if !ok {
				cn.fail(errInt)
				return o, false
			}
			if v < 1 {
				cn.fail(errSyntax)
				return o, false
			}
			o.count = int(min(v, math.MaxInt32))
			i++
		case withType && eq(args[i], "TYPE") && i+1 < len(args):
			o.typ = string(lower(args[i+1]))
			i++
		default:
			cn.fail(errSyntax)
			return o, false
		}
	}
	return o, true
}

// scanWindow returns the bucket range [from, to) of one call over n items.
func scanWindow(o scanOpts, n int) (from, to uint64) {
	w := uint64(scanBuckets / 1024) // at most 1024 calls per full iteration
	if n > 0 {
		w = max(w, uint64(o.count)*scanBuckets/uint64(n)+1)
	}
	from = min(o.cursor, scanBuckets)
	to = min(from+w, scanBuckets)
	return from, to
}

func (cn *conn) scanReply(next uint64, items []string) {
	cn.out.arrayHeader(2)
	if next >= scanBuckets {
		next = 0
	}
	cn.out.bulkString(strconv.FormatUint(next, 10))
	cn.out.arrayHeader(len(items))
	for _, s := range items {
		cn.out.bulkString(s)
	}
}

func cmdScan(cn *conn, args [][]byte) {
	o, ok := cn.scanArgs(args[2:], args[1], true)
	if !ok {
		return
	}
	d := cn.db()
	from, to := scanWindow(o, len(d.keys))
	now := nowMs()
	var keys []string
	for k, e := range d.keys {
		b := scanBucket([]byte(k))
		if b < from || b >= to || !live(d, k, now) {
			continue
		}
		if (o.match == nil || globMatch(o.match, []byte(k))) && (o.typ == "" || o.typ == e.k.String()) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	cn.scanReply(to, keys)
}

func cmdRename(cn *conn, args [][]byte) {
	ks, d := cn.srv.ks, cn.db()
	e := ks.lookup(d, args[1])
	if e == nil {
		cn.fail(errNoKey)
		return
	}
	nx := eq(args[0], "renamenx")
	if string(args[1]) == string(args[2]) {
		if nx {
			cn.out.int(0)
		} else {
			cn.out.simple("OK")
		}
		return
	}
	if nx && ks.lookup(d, args[2]) != nil {
		cn.out.int(0)
		return
	}
	t, hasT := d.expires[string(args[1])]
	delete(d.keys, string(args[1]))
	delete(d.expires, string(args[1]))
	ks.used -= int64(len(args[1]))
	ks.del(d, string(args[2]))
	d.keys[string(args[2])] = e
	ks.used += int64(len(args[2]))
	if hasT {
		d.expires[string(args[2])] = t
	}
	if e.k == kList {
		ks.signalReady(cn.dbi, args[2])
	}
	if nx {
		cn.out.int(1)
	} else {
		cn.out.simple("OK")
	}
}

func cmdExpire(cn *conn, args [][]byte) {
	name := string(lower(args[0]))
	v, ok := str2ll(args[2])
	if !ok {
		cn.fail(errInt)
		return
	}
	var nx, xx, gt, lt bool
	for _, a := range args[3:] {
		switch {
		case eq(a, "NX"):
			nx = true
		case eq(a, "XX"):
			xx = true
		case eq(a, "GT"):
			gt = true
		case eq(a, "LT"):
			lt = true
		default:
			cn.fail("Unsupported option " + sanitize(a))
			return
		}
	}
	if nx && (xx || gt || lt) {
		cn.fail("NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		cn.fail("GT and LT options at the same time are not compatible")
		return
	}
	now := nowMs()
	at := v
	bad := false
	switch name {
	case "expire":
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			bad = true
		}
		at = v * 1000
		fallthrough
	case "pexpire":
		if !bad && ((at > 0 && at > math.MaxInt64-now) || (at < 0 && at < math.MinInt64+now)) {
			bad = true
		}
		at += now
	case "expireat":
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			bad = true
		}
		at = v * 1000
	}
	if bad {
		cn.fail("invalid expire time in '" + name + "' command")
		return
	}
	ks, d := cn.srv.ks, cn.db()
	if ks.lookup(d, args[1]) == nil {
		cn.out.int(0)
		return
	}
	cur, has := d.expires[string(args[1])]
	if (nx && has) || (xx && !has) || (gt && (!has || at <= cur)) || (lt && has && at >= cur) {
		cn.out.int(0)
		return
	}
	cn.touched(args[1])
	if at <= now {
		ks.del(d, string(args[1]))
		cn.out.int(1)
		return
	}
	d.expires[string(args[1])] = at
	cn.out.int(1)
}

func cmdTTL(cn *conn, args [][]byte) {
	ks, d := cn.srv.ks, cn.db()
	if ks.lookup(d, args[1]) == nil {
		cn.out.int(-2)
		return
	}
	t, ok := d.expires[string(args[1])]
	if !ok {
		cn.out.int(-1)
		return
	}
	switch string(lower(args[0])) {
	case "ttl":
		cn.out.int((max(t-nowMs(), 0) + 500) / 1000)
	case "pttl":
		cn.out.int(max(t-nowMs(), 0))
	case "expiretime":
		cn.out.int(t / 1000)
	default:
		cn.out.int(t)
	}
}

func cmdPersist(cn *conn, args [][]byte) {
	ks, d := cn.srv.ks, cn.db()
	if ks.lookup(d, args[1]) == nil {
		cn.out.int(0)
		return
	}
	if _, ok := d.expires[string(args[1])]; !ok {
		cn.out.int(0)
		return
	}
	cn.touched(args[1])
	delete(d.expires, string(args[1]))
	cn.out.int(1)
}

// globMatch matches s against a Redis glob pattern (*, ?, [...] with ^
// and ranges, \ escapes), as Redis's stringmatchlen. Recursion on '*' is
// bounded by collapsing consecutive stars and iterating.
func globMatch(p, s []byte) bool {
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				for px+1 < len(p) && p[px+1] == '*' {
					px++
				}
				nextPx, nextSx = px, sx+1
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx++
					continue
				}
			case '[':
				if sx < len(s) {
					if np, ok := matchClass(p, px, s[sx]); ok {
						px = np
						sx++
						continue
					}
				}
			case '\\':
				if px+1 < len(p) {
					if sx < len(s) && s[sx] == p[px+1] {
						px += 2
						sx++
						continue
					}
				} else if sx < len(s) && s[sx] == '\\' {
					px++
					sx++
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if nextSx > 0 && nextSx <= len(s) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}

// matchClass matches c against the [...] class at p[px]; it returns the
// index after the class.
func matchClass(p []byte, px int, c byte) (int, bool) {
	px++
	not := px < len(p) && p[px] == '^'
	if not {
		px++
	}
	match := false
	for px < len(p) {
		switch {
		case p[px] == '\\' && px+1 < len(p):
			px++
			if p[px] == c {
				match = true
			}
		case p[px] == ']':
			goto done
		case px+2 < len(p) && p[px+1] == '-':
			lo, hi := p[px], p[px+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if c >= lo && c <= hi {
				match = true
			}
			px += 2
		default:
			if p[px] == c {
				match = true
			}
		}
		px++
	}
	px-- // unterminated class: Redis treats the end of the pattern as ']'
done:
	if not {
		match = !match
	}
	return px + 1, match
}
