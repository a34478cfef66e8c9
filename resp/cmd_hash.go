package resp

import (
	"math"
	"math/big"
	"sort"
	"strconv"
	"unsafe"
)

func init() {
	k1 := func(name string, arity, flags int, summary string, fn func(*conn, [][]byte)) *command {
		return &command{name: name, arity: arity, flags: flags, first: 1, last: 1, step: 1, group: "hash", summary: summary, fn: fn}
	}
	register(
		k1("hset", -4, fWrite|fDenyOOM|fFast, "Set fields of a hash", cmdHSet),
		k1("hmset", -4, fWrite|fDenyOOM|fFast, "Set fields of a hash", cmdHSet),
		k1("hsetnx", 4, fWrite|fDenyOOM|fFast|fTouches, "Set a field only if it does not exist", cmdHSetNX),
		k1("hget", 3, fRead|fFast, "The value of a field", cmdHGet),
		k1("hmget", -3, fRead|fFast, "The values of fields", cmdHMGet),
		k1("hgetall", 2, fRead, "All fields and values", cmdHGetAll),
		k1("hkeys", 2, fRead, "All fields", cmdHGetAll),
		k1("hvals", 2, fRead, "All values", cmdHGetAll),
		k1("hdel", -3, fWrite|fFast|fTouches, "Delete fields", cmdHDel),
		k1("hlen", 2, fRead|fFast, "Number of fields", cmdHLen),
		k1("hstrlen", 3, fRead|fFast, "Length of a field's value", cmdHStrlen),
		k1("hexists", 3, fRead|fFast, "Whether a field exists", cmdHExists),
		k1("hincrby", 4, fWrite|fDenyOOM|fFast, "Increment an integer field", cmdHIncrBy),
		k1("hincrbyfloat", 4, fWrite|fDenyOOM|fFast, "Increment a float field", cmdHIncrByFloat),
		k1("hscan", -3, fRead, "Iterate a hash's fields", cmdHScan),
	)
}

func (cn *conn) getHash(key []byte) (*entry, bool) {
	e := cn.srv.ks.lookup(cn.db(), key)
	if e != nil && e.k != kHash {
		cn.fail(wrongType)
		return nil, false
	}
	return e, true
}

// hset stores a copy of v under f, reporting whether f is new.
func (ks *keyspace) hset(e *entry, f, v []byte) bool {
	p := ks.newVal(v)
	old, isNew := e.hash().set(f, p)
	if isNew {
		ks.used += valSize(f) + valSize(p)
	} else {
		ks.used += valSize(p) - valSize(old)
		freeVal(old)
	}
	return isNew
}

func (cn *conn) hashForWrite(key []byte) (*entry, bool) {
	e, ok := cn.getHash(key)
	if !ok {
		return nil, false
	}
	if e == nil {
		e = &entry{k: kHash, p: unsafe.Pointer(&hash{})}
		cn.srv.ks.add(cn.db(), key, e)
	}
	return e, true
}

func cmdHSet(cn *conn, args [][]byte) {
	if len(args)%2 != 0 {
		cn.arity(string(lower(args[0])))
		return
	}
	e, ok := cn.hashForWrite(args[1])
	if !ok {
		return
	}
	n := 0
	for i := 2; i < len(args); i += 2 {
		if cn.srv.ks.hset(e, args[i], args[i+1]) {
			n++
		}
	}
	if eq(args[0], "hmset") {
		cn.out.simple("OK")
		return
	}
	cn.out.int(int64(n))
}

func cmdHSetNX(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	if e != nil {
		if _, has := e.hash().get(args[2]); has {
			cn.out.int(0)
			return
		}
	}
	cn.touched(args[1])
	e, _ = cn.hashForWrite(args[1])
	cn.srv.ks.hset(e, args[2], args[3])
	cn.out.int(1)
}

func cmdHGet(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.null()
		return
	}
	v, has := e.hash().get(args[2])
	if !has {
		cn.out.null()
		return
	}
	cn.reply(v)
}

func cmdHMGet(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	cn.out.arrayHeader(len(args) - 2)
	for _, f := range args[2:] {
		var v []byte
		has := false
		if e != nil {
			v, has = e.hash().get(f)
		}
		if !has {
			cn.out.null()
			continue
		}
		cn.reply(v)
	}
}

func cmdHGetAll(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	name := string(lower(args[0]))
	n := 0
	if e != nil {
		n = e.hash().len()
	}
	switch name {
	case "hgetall":
		cn.out.mapHeader(n)
	default:
		cn.out.arrayHeader(n)
	}
	if e == nil {
		return
	}
	e.hash().each(func(f, v []byte) {
		if name != "hvals" {
			cn.out.bulk(f)
		}
		if name != "hkeys" {
			cn.reply(v)
		}
	})
}

func cmdHDel(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.int(0)
		return
	}
	ks := cn.srv.ks
	n := 0
	for _, f := range args[2:] {
		if v, has := e.hash().del(f); has {
			if n == 0 {
				cn.touched(args[1])
			}
			ks.used -= valSize(f) + valSize(v)
			freeVal(v)
			n++
			if e.hash().len() == 0 {
				ks.del(cn.db(), string(args[1]))
				break
			}
		}
	}
	cn.out.int(int64(n))
}

func cmdHLen(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.int(0)
		return
	}
	cn.out.int(int64(e.hash().len()))
}

func cmdHStrlen(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.int(0)
		return
	}
	v, _ := e.hash().get(args[2])
	cn.out.int(int64(len(v)))
}

func cmdHExists(cn *conn, args [][]byte) {
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	has := false
	if e != nil {
		_, has = e.hash().get(args[2])
	}
	if has {
		cn.out.int(1)
	} else {
		cn.out.int(0)
	}
}

func cmdHIncrBy(cn *conn, args [][]byte) {
	by, ok := cn.intArg(args[3])
	if !ok {
		return
	}
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	var cur int64
	if e != nil {
		if v, has := e.hash().get(args[2]); has {
			if cur, ok = str2ll(v); !ok {
				cn.fail("hash value is not an integer")
				return
			}
		}
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		cn.fail("increment or decrement would overflow")
		return
	}
	cur += by
	e, _ = cn.hashForWrite(args[1])
	cn.srv.ks.hset(e, args[2], strconv.AppendInt(nil, cur, 10))
	cn.out.int(cur)
}

func cmdHIncrByFloat(cn *conn, args [][]byte) {
	by, ok := parseLD(args[3])
	if !ok {
		cn.fail(errFloat)
		return
	}
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	cur := new(big.Float)
	if e != nil {
		if v, has := e.hash().get(args[2]); has {
			if cur, ok = parseLD(v); !ok {
				cn.fail("hash value is not a float")
				return
			}
		}
	}
	sum, ok := addLD(cur, by)
	if !ok {
		cn.fail("increment would produce NaN or Infinity")
		return
	}
	v := []byte(formatLD(sum))
	e, _ = cn.hashForWrite(args[1])
	cn.srv.ks.hset(e, args[2], v)
	cn.out.bulk(v)
}

func cmdHScan(cn *conn, args [][]byte) {
	o, ok := cn.scanArgs(args[3:], args[2], false)
	if !ok {
		return
	}
	e, ok := cn.getHash(args[1])
	if !ok {
		return
	}
	var items []string
	if e == nil {
		cn.scanReply(0, nil)
		return
	}
	if e.hash().m == nil { // small: everything in one call, as Redis's listpack
		e.hash().each(func(f, v []byte) {
			if o.match == nil || globMatch(o.match, f) {
				items = append(items, string(f), string(v))
			}
		})
		cn.scanReply(0, items)
		return
	}
	from, to := scanWindow(o, e.hash().len())
	var fs []string
	for f := range e.hash().m {
		if b := scanBucket([]byte(f)); b >= from && b < to && (o.match == nil || globMatch(o.match, []byte(f))) {
			fs = append(fs, f)
		}
	}
	sort.Strings(fs)
	for _, f := range fs {
		items = append(items, f, string(e.hash().m[f]))
	}
	cn.scanReply(to, items)
}
