package resp

import (
	"math"
	"math/big"
	"strconv"

	"github.com/cornflakes-go/cornflakes/mem"
)

// maxString is the largest string value (Redis's proto-max-bulk-len).
const maxString = 512 << 20

func init() {
	register(
		&command{name: "get", arity: 2, flags: fRead | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Get the value of a key", fn: cmdGet},
		&command{name: "set", arity: -3, flags: fWrite | fDenyOOM | fTouches, first: 1, last: 1, step: 1, group: "string", summary: "Set the string value of a key", fn: cmdSet},
		&command{name: "setnx", arity: 3, flags: fWrite | fDenyOOM | fFast | fTouches, first: 1, last: 1, step: 1, group: "string", summary: "Set a key only if it does not exist", fn: cmdSetNX},
		&command{name: "setex", arity: 4, flags: fWrite | fDenyOOM, first: 1, last: 1, step: 1, group: "string", summary: "Set a key with an expiry in seconds", fn: cmdSetEX},
		&command{name: "psetex", arity: 4, flags: fWrite | fDenyOOM, first: 1, last: 1, step: 1, group: "string", summary: "Set a key with an expiry in milliseconds", fn: cmdSetEX},
		&command{name: "getset", arity: 3, flags: fWrite | fDenyOOM | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Set a key and return its old value", fn: cmdGetSet},
		&command{name: "getdel", arity: 2, flags: fWrite | fFast | fTouches, first: 1, last: 1, step: 1, group: "string", summary: "Get a key and delete it", fn: cmdGetDel},
		&command{name: "getex", arity: -2, flags: fWrite | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Get a key and set its expiry", fn: cmdGetEx},
		&command{name: "mget", arity: -2, flags: fRead | fFast, first: 1, last: -1, step: 1, group: "string", summary: "Get the values of keys", fn: cmdMGet},
		&command{name: "mset", arity: -3, flags: fWrite | fDenyOOM | fTouches, first: 1, last: -1, step: 2, group: "string", summary: "Set keys", fn: cmdMSet},
		&command{name: "msetnx", arity: -3, flags: fWrite | fDenyOOM | fTouches, first: 1, last: -1, step: 2, group: "string", summary: "Set keys only if none exists", fn: cmdMSet},
		&command{name: "append", arity: 3, flags: fWrite | fDenyOOM | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Append to a string", fn: cmdAppend},
		&command{name: "strlen", arity: 2, flags: fRead | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Length of a string", fn: cmdStrlen},
		&command{name: "incr", arity: 2, flags: fWrite | fDenyOOM | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Increment an integer", fn: cmdIncr},
		&command{name: "decr", arity: 2, flags: fWrite | fDenyOOM | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Decrement an integer", fn: cmdIncr},
		&command{name: "incrby", arity: 3, flags: fWrite | fDenyOOM | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Increment an integer by an amount", fn: cmdIncr},
		&command{name: "decrby", arity: 3, flags: fWrite | fDenyOOM | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Decrement an integer by an amount", fn: cmdIncr},
		&command{name: "incrbyfloat", arity: 3, flags: fWrite | fDenyOOM | fFast, first: 1, last: 1, step: 1, group: "string", summary: "Increment a float", fn: cmdIncrByFloat},
		&command{name: "getrange", arity: 4, flags: fRead, first: 1, last: 1, step: 1, group: "string", summary: "A substring of a string", fn: cmdGetRange},
		&command{name: "setrange", arity: 4, flags: fWrite | fDenyOOM, first: 1, last: 1, step: 1, group: "string", summary: "Overwrite part of a string", fn: cmdSetRange},
	)
}

// reply writes the stored value p as a bulk string, zero-copy (with a
// reference held until the write returns) when it lives in registered
// memory and is at least the threshold. Called with the keyspace lock held.
func (cn *conn) reply(p []byte) {
	th := cn.srv.cfg.Threshold
	if th >= 0 && len(p) >= th && len(p) > 0 {
		if b, ok := mem.Recover(p); ok {
			cn.out.bulkHeader(len(p))
			cn.out.zeroCopy(b)
			cn.out.buf = append(cn.out.buf, '\r', '\n')
			cn.srv.stats.zc.Add(1)
			cn.srv.stats.zcBytes.Add(uint64(len(p)))
			return
		}
	}
	cn.out.bulk(p)
}

// replyOwned writes a value the caller took out of the keyspace and frees it.
func (cn *conn) replyOwned(p []byte) {
	cn.reply(p)
	freeVal(p)
}

// getString returns key's string entry; ok false after answering
// WRONGTYPE.
func (cn *conn) getString(key []byte) (e *entry, ok bool) {
	e = cn.srv.ks.lookup(cn.db(), key)
	if e != nil && e.k != kString {
		cn.fail(wrongType)
		return nil, false
	}
	return e, true
}

func cmdGet(cn *conn, args [][]byte) {
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.null()
		return
	}
	cn.reply(e.str())
}

func cmdMGet(cn *conn, args [][]byte) {
	cn.out.arrayHeader(len(args) - 1)
	for _, k := range args[1:] {
		e := cn.srv.ks.lookup(cn.db(), k)
		if e == nil || e.k != kString {
			cn.out.null()
			continue
		}
		cn.reply(e.str())
	}
}

// expireArg converts an EX/PX/EXAT/PXAT argument to Unix milliseconds,
// answering Redis's errors for cmd.
func (cn *conn) expireArg(cmd, unit string, b []byte) (int64, bool) {
	v, ok := str2ll(b)
	if !ok {
		cn.fail(errInt)
		return 0, false
	}
	bad := func() (int64, bool) { cn.fail("invalid expire time in '" + cmd + "' command"); return 0, false }
	if v <= 0 {
		return bad()
	}
	now := nowMs()
	switch unit {
	case "EX":
		if v > math.MaxInt64/1000 {
			return bad()
		}
		v *= 1000
		fallthrough
	case "PX":
		if v > math.MaxInt64-now {
			return bad()
		}
		return now + v, true
	case "EXAT":
		if v > math.MaxInt64/1000 {
			return bad()
		}
		return v * 1000, true
	}
	return v, true // PXAT
}

func cmdSet(cn *conn, args [][]byte) {
	var nx, xx, get, keep bool
	unit := ""
	var when []byte
	for i := 3; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "NX") && !xx:
			nx = true
		case eq(a, "XX") && !nx:
			xx = true
		case eq(a, "GET"):
			get = true
		case eq(a, "KEEPTTL") && unit == "":
			keep = true
		case (eq(a, "EX") || eq(a, "PX") || eq(a, "EXAT") || eq(a, "PXAT")) && !keep && unit == "" && i+1 < len(args):
			unit = string(upper(a))
			i++
			when = args[i]
		default:
			cn.fail(errSyntax)
			return
		}
	}
	var at int64
	if unit != "" {
		var ok bool
		if at, ok = cn.expireArg("set", unit, when); !ok {
			return
		}
	}
	ks, d := cn.srv.ks, cn.db()
	e := ks.lookup(d, args[1])
	if get {
		if e != nil && e.k != kString {
			cn.fail(wrongType)
			return
		}
		if e == nil {
			cn.out.null()
		} else {
			cn.reply(e.str())
		}
	}
	if (nx && e != nil) || (xx && e == nil) {
		if !get {
			cn.out.null()
		}
		return
	}
	cn.touched(args[1])
	ks.setStringAt(d, e, args[1], args[2], keep)
	if unit != "" {
		d.expires[string(args[1])] = at
	}
	if !get {
		cn.out.simple("OK")
	}
}

func upper(b []byte) []byte {
	u := append([]byte(nil), b...)
	for i, c := range u {
		if c >= 'a' && c <= 'z' {
			u[i] = c - 'a' + 'A'
		}
	}
	return u
}

func cmdSetNX(cn *conn, args [][]byte) {
	ks, d := cn.srv.ks, cn.db()
	if ks.lookup(d, args[1]) != nil {
		cn.out.int(0)
		return
	}
	cn.touched(args[1])
	ks.setString(d, args[1], args[2], false)
	cn.out.int(1)
}

func cmdSetEX(cn *conn, args [][]byte) {
	name, unit := "setex", "EX"
	if eq(args[0], "psetex") {
		name, unit = "psetex", "PX"
	}
	at, ok := cn.expireArg(name, unit, args[2])
	if !ok {
		return
	}
	d := cn.db()
	cn.srv.ks.setString(d, args[1], args[3], false)
	d.expires[string(args[1])] = at
	cn.out.simple("OK")
}

func cmdGetSet(cn *conn, args [][]byte) {
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.null()
	} else {
		cn.reply(e.str())
	}
	cn.srv.ks.setString(cn.db(), args[1], args[2], false)
}

func cmdGetDel(cn *conn, args [][]byte) {
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.null()
		return
	}
	cn.reply(e.str())
	cn.touched(args[1])
	cn.srv.ks.del(cn.db(), string(args[1]))
}

func cmdGetEx(cn *conn, args [][]byte) {
	unit := ""
	persist := false
	var when []byte
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "PERSIST") && unit == "" && !persist:
			persist = true
		case (eq(a, "EX") || eq(a, "PX") || eq(a, "EXAT") || eq(a, "PXAT")) && unit == "" && !persist && i+1 < len(args):
			unit = string(upper(a))
			i++
			when = args[i]
		default:
			cn.fail(errSyntax)
			return
		}
	}
	var at int64
	if unit != "" {
		var ok bool
		if at, ok = cn.expireArg("getex", unit, when); !ok {
			return
		}
	}
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.null()
		return
	}
	cn.reply(e.str())
	d := cn.db()
	switch {
	case unit != "":
		d.expires[string(args[1])] = at
	case persist:
		delete(d.expires, string(args[1]))
	}
}

func cmdMSet(cn *conn, args [][]byte) {
	if len(args)%2 == 0 {
		cn.arity(string(lower(args[0])))
		return
	}
	ks, d := cn.srv.ks, cn.db()
	nx := eq(args[0], "msetnx")
	if nx {
		for i := 1; i < len(args); i += 2 {
			if ks.lookup(d, args[i]) != nil {
				cn.out.int(0)
				return
			}
		}
	}
	for i := 1; i < len(args); i += 2 {
		cn.touched(args[i])
		ks.setString(d, args[i], args[i+1], false)
	}
	if nx {
		cn.out.int(1)
	} else {
		cn.out.simple("OK")
	}
}

func lower(b []byte) []byte {
	u := append([]byte(nil), b...)
	for i, c := range u {
		if c >= 'A' && c <= 'Z' {
			u[i] = c + 'a' - 'A'
		}
	}
	return u
}

func cmdAppend(cn *conn, args [][]byte) {
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	ks, d := cn.srv.ks, cn.db()
	if e == nil {
		ks.setString(d, args[1], args[2], false)
		cn.out.int(int64(len(args[2])))
		return
	}
	if len(e.str())+len(args[2]) > maxString {
		cn.fail("string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	cn.setValue(e, append(append([]byte(nil), e.str()...), args[2]...))
	cn.out.int(int64(len(e.str())))
}

// setValue replaces a string entry's value by a copy of v in the
// keyspace's storage (the pool when large enough).
func (cn *conn) setValue(e *entry, v []byte) {
	cn.srv.ks.replaceString(e, cn.srv.ks.newVal(v))
}

func cmdStrlen(cn *conn, args [][]byte) {
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.int(0)
		return
	}
	cn.out.int(int64(len(e.str())))
}

func cmdIncr(cn *conn, args [][]byte) {
	by := int64(1)
	name := string(lower(args[0]))
	if name == "incrby" || name == "decrby" {
		v, ok := cn.intArg(args[2])
		if !ok {
			return
		}
		by = v
	}
	if name == "decr" || name == "decrby" {
		if by == math.MinInt64 {
			cn.fail("decrement would overflow")
			return
		}
		by = -by
	}
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	var cur int64
	if e != nil {
		if cur, ok = str2ll(e.str()); !ok {
			cn.fail(errInt)
			return
		}
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		cn.fail("increment or decrement would overflow")
		return
	}
	cur += by
	v := strconv.AppendInt(nil, cur, 10)
	if e == nil {
		cn.srv.ks.setString(cn.db(), args[1], v, false)
	} else {
		cn.setValue(e, v)
	}
	cn.out.int(cur)
}

func cmdIncrByFloat(cn *conn, args [][]byte) {
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	cur := new(big.Float)
	if e != nil {
		if cur, ok = parseLD(e.str()); !ok {
			cn.fail(errFloat)
			return
		}
	}
	by, ok := parseLD(args[2])
	if !ok {
		cn.fail(errFloat)
		return
	}
	sum, ok := addLD(cur, by)
	if !ok {
		cn.fail("increment would produce NaN or Infinity")
		return
	}
	v := []byte(formatLD(sum))
	if e == nil {
		cn.srv.ks.setString(cn.db(), args[1], v, false)
	} else {
		cn.setValue(e, v)
	}
	cn.out.bulk(v)
}

func cmdGetRange(cn *conn, args [][]byte) {
	start, ok1 := str2ll(args[2])
	end, ok2 := str2ll(args[3])
	if !ok1 || !ok2 {
		cn.fail(errInt)
		return
	}
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	var s []byte
	if e != nil {
		s = e.str()
	}
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		cn.out.bulk(nil)
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		cn.out.bulk(nil)
		return
	}
	cn.out.bulk(s[start : end+1])
}

func cmdSetRange(cn *conn, args [][]byte) {
	off, ok := str2ll(args[2])
	if !ok {
		cn.fail(errInt)
		return
	}
	if off < 0 {
		cn.fail("offset is out of range")
		return
	}
	e, ok := cn.getString(args[1])
	if !ok {
		return
	}
	val := args[3]
	if e == nil {
		if len(val) == 0 {
			cn.out.int(0)
			return
		}
		if off+int64(len(val)) > maxString {
			cn.fail("string exceeds maximum allowed size (proto-max-bulk-len)")
			return
		}
		v := make([]byte, off+int64(len(val)))
		copy(v[off:], val)
		cn.srv.ks.setString(cn.db(), args[1], v, false)
		cn.out.int(int64(len(v)))
		return
	}
	if len(val) == 0 {
		cn.out.int(int64(len(e.str())))
		return
	}
	if off+int64(len(val)) > maxString {
		cn.fail("string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	v := make([]byte, max(int64(len(e.str())), off+int64(len(val))))
	copy(v, e.str())
	copy(v[off:], val)
	cn.setValue(e, v)
	cn.out.int(int64(len(v)))
}
