package resp

import "unsafe"

import "bytes"

func init() {
	k1 := func(name string, arity, flags int, summary string, fn func(*conn, [][]byte)) *command {
		return &command{name: name, arity: arity, flags: flags, first: 1, last: 1, step: 1, group: "list", summary: summary, fn: fn}
	}
	register(
		k1("lpush", -3, fWrite|fDenyOOM|fFast, "Prepend elements to a list", cmdPush),
		k1("rpush", -3, fWrite|fDenyOOM|fFast, "Append elements to a list", cmdPush),
		k1("lpushx", -3, fWrite|fDenyOOM|fFast|fTouches, "Prepend elements to an existing list", cmdPush),
		k1("rpushx", -3, fWrite|fDenyOOM|fFast|fTouches, "Append elements to an existing list", cmdPush),
		k1("lpop", -2, fWrite|fFast|fTouches, "Remove and return the first elements", cmdPop),
		k1("rpop", -2, fWrite|fFast|fTouches, "Remove and return the last elements", cmdPop),
		k1("llen", 2, fRead|fFast, "Length of a list", cmdLLen),
		k1("lrange", 4, fRead, "A range of elements", cmdLRange),
		k1("lindex", 3, fRead, "An element by index", cmdLIndex),
		k1("lset", 4, fWrite|fDenyOOM, "Set an element by index", cmdLSet),
		k1("lrem", 4, fWrite|fTouches, "Remove elements equal to a value", cmdLRem),
		k1("ltrim", 4, fWrite, "Trim a list to a range", cmdLTrim),
		k1("linsert", 5, fWrite|fDenyOOM, "Insert an element before or after another", cmdLInsert),
		k1("lpos", -3, fRead, "Indexes of matching elements", cmdLPos),
		&command{name: "lmove", arity: 5, flags: fWrite | fDenyOOM, first: 1, last: 2, step: 1, group: "list", summary: "Pop from one list and push to another", fn: cmdLMove},
		&command{name: "rpoplpush", arity: 3, flags: fWrite | fDenyOOM, first: 1, last: 2, step: 1, group: "list", summary: "Pop the tail of one list and push it onto another", fn: cmdLMove},
		&command{name: "blpop", arity: -3, flags: fWrite | fBlocking, first: 1, last: -2, step: 1, group: "list", summary: "Pop the first element, blocking", fn: cmdBPop},
		&command{name: "brpop", arity: -3, flags: fWrite | fBlocking, first: 1, last: -2, step: 1, group: "list", summary: "Pop the last element, blocking", fn: cmdBPop},
		&command{name: "blmove", arity: 6, flags: fWrite | fDenyOOM | fBlocking, first: 1, last: 2, step: 1, group: "list", summary: "LMOVE, blocking", fn: cmdBLMove},
		&command{name: "brpoplpush", arity: 4, flags: fWrite | fDenyOOM | fBlocking, first: 1, last: 2, step: 1, group: "list", summary: "RPOPLPUSH, blocking", fn: cmdBLMove},
	)
}

// getList returns key's list entry (nil when absent); ok false after
// answering WRONGTYPE.
func (cn *conn) getList(key []byte) (*entry, bool) {
	e := cn.srv.ks.lookup(cn.db(), key)
	if e != nil && e.k != kList {
		cn.fail(wrongType)
		return nil, false
	}
	return e, true
}

// pushVal stores a copy of v at one end of e's list.
func (ks *keyspace) pushVal(e *entry, v []byte, left bool) {
	p := ks.newVal(v)
	ks.used += valSize(p)
	if left {
		e.list().pushFront(p)
	} else {
		e.list().pushBack(p)
	}
}

// popVal takes an element off one end of e's list (the caller owns it)
// and removes key when the list is empty.
func (ks *keyspace) popVal(d *db, key string, e *entry, left bool) []byte {
	var p []byte
	if left {
		p = e.list().popFront()
	} else {
		p = e.list().popBack()
	}
	ks.used -= valSize(p)
	if e.list().len() == 0 {
		ks.del(d, key)
	}
	return p
}

func (ks *keyspace) newList(d *db, key []byte) *entry {
	e := &entry{k: kList, p: unsafe.Pointer(&list{})}
	ks.add(d, key, e)
	return e
}

func cmdPush(cn *conn, args [][]byte) {
	name := args[0] // [lr]push[x], any case
	left := name[0] == 'l' || name[0] == 'L'
	onlyExisting := len(name) == 6
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	ks := cn.srv.ks
	if e == nil {
		if onlyExisting {
			cn.out.int(0)
			return
		}
		e = ks.newList(cn.db(), args[1])
	}
	cn.touched(args[1])
	for _, v := range args[2:] {
		ks.pushVal(e, v, left)
	}
	ks.signalReady(cn.dbi, args[1])
	cn.out.int(int64(e.list().len()))
}

func cmdPop(cn *conn, args [][]byte) {
	left := eq(args[0], "lpop")
	count := int64(-1)
	if len(args) > 3 {
		cn.arity(string(lower(args[0])))
		return
	}
	if len(args) == 3 {
		v, ok := str2ll(args[2])
		if !ok || v < 0 {
			cn.fail("value is out of range, must be positive")
			return
		}
		count = v
	}
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		if count >= 0 {
			cn.out.nullArray()
		} else {
			cn.out.null()
		}
		return
	}
	ks, d := cn.srv.ks, cn.db()
	if count < 0 {
		cn.touched(args[1])
		cn.replyOwned(ks.popVal(d, string(args[1]), e, left))
		return
	}
	n := min(count, int64(e.list().len()))
	if n > 0 {
		cn.touched(args[1])
	}
	cn.out.arrayHeader(int(n))
	for i := int64(0); i < n; i++ {
		cn.replyOwned(ks.popVal(d, string(args[1]), e, left))
	}
}

func cmdLLen(cn *conn, args [][]byte) {
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.int(0)
		return
	}
	cn.out.int(int64(e.list().len()))
}

// listRange converts Redis start/stop indexes to [start, end] within n
// elements; ok false when the range is empty.
func listRange(start, end int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if end < 0 {
		end += ln
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= ln {
		return 0, 0, false
	}
	if end >= ln {
		end = ln - 1
	}
	return int(start), int(end), true
}

func cmdLRange(cn *conn, args [][]byte) {
	start, ok1 := str2ll(args[2])
	end, ok2 := str2ll(args[3])
	if !ok1 || !ok2 {
		cn.fail(errInt)
		return
	}
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.arrayHeader(0)
		return
	}
	s, t, ok := listRange(start, end, e.list().len())
	if !ok {
		cn.out.arrayHeader(0)
		return
	}
	cn.out.arrayHeader(t - s + 1)
	l, th := e.list(), cn.srv.cfg.Threshold
	for i := s; i <= t; i++ {
		if p := l.index(i); th >= 0 && len(p) >= th {
			cn.reply(p) // perhaps zero-copy
		} else {
			cn.out.bulk(p)
		}
	}
}

func cmdLIndex(cn *conn, args [][]byte) {
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.null()
		return
	}
	idx, ok := cn.intArg(args[2])
	if !ok {
		return
	}
	n := int64(e.list().len())
	if idx < 0 {
		idx += n
	}
	if idx < 0 || idx >= n {
		cn.out.null()
		return
	}
	cn.reply(e.list().index(int(idx)))
}

func cmdLSet(cn *conn, args [][]byte) {
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.fail(errNoKey)
		return
	}
	idx, ok := cn.intArg(args[2])
	if !ok {
		return
	}
	n := int64(e.list().len())
	if idx < 0 {
		idx += n
	}
	if idx < 0 || idx >= n {
		cn.fail("index out of range")
		return
	}
	ks := cn.srv.ks
	old := e.list().index(int(idx))
	p := ks.newVal(args[3])
	ks.used += valSize(p) - valSize(old)
	e.list().set(int(idx), p)
	freeVal(old)
	cn.out.simple("OK")
}

func cmdLRem(cn *conn, args [][]byte) {
	count, ok := cn.intArg(args[2])
	if !ok {
		return
	}
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.int(0)
		return
	}
	ks := cn.srv.ks
	removed := int64(0)
	if count >= 0 {
		for i := 0; i < e.list().len() && (count == 0 || removed < count); {
			if bytes.Equal(e.list().index(i), args[3]) {
				p := e.list().removeAt(i)
				ks.used -= valSize(p)
				freeVal(p)
				removed++
				continue
			}
			i++
		}
	} else {
		for i := e.list().len() - 1; i >= 0 && removed < -count; i-- {
			if bytes.Equal(e.list().index(i), args[3]) {
				p := e.list().removeAt(i)
				ks.used -= valSize(p)
				freeVal(p)
				removed++
			}
		}
	}
	if removed > 0 {
		cn.touched(args[1])
	}
	if e.list().len() == 0 {
		ks.del(cn.db(), string(args[1]))
	}
	cn.out.int(removed)
}

func cmdLTrim(cn *conn, args [][]byte) {
	start, ok1 := str2ll(args[2])
	end, ok2 := str2ll(args[3])
	if !ok1 || !ok2 {
		cn.fail(errInt)
		return
	}
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.simple("OK")
		return
	}
	ks := cn.srv.ks
	s, t, ok := listRange(start, end, e.list().len())
	if !ok {
		s, t = e.list().len(), e.list().len()-1 // remove everything
	}
	drop := func(p []byte) { ks.used -= valSize(p); freeVal(p) }
	for i := e.list().len() - 1; i > t; i-- {
		drop(e.list().popBack())
	}
	for i := 0; i < s; i++ {
		drop(e.list().popFront())
	}
	if e.list().len() == 0 {
		ks.del(cn.db(), string(args[1]))
	}
	cn.out.simple("OK")
}

func cmdLInsert(cn *conn, args [][]byte) {
	var after bool
	switch {
	case eq(args[2], "AFTER"):
		after = true
	case eq(args[2], "BEFORE"):
	default:
		cn.fail(errSyntax)
		return
	}
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		cn.out.int(0)
		return
	}
	for i := 0; i < e.list().len(); i++ {
		if bytes.Equal(e.list().index(i), args[3]) {
			if after {
				i++
			}
			p := cn.srv.ks.newVal(args[4])
			cn.srv.ks.used += valSize(p)
			e.list().insert(i, p)
			cn.out.int(int64(e.list().len()))
			return
		}
	}
	cn.out.int(-1)
}

func cmdLPos(cn *conn, args [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(args); i++ {
		if i+1 >= len(args) {
			cn.fail(errSyntax)
			return
		}
		v, ok := str2ll(args[i+1])
		switch {
		case eq(args[i], "RANK"):
			if !ok {
				cn.fail(errInt)
				return
			}
			if v == 0 {
				cn.fail("RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			if v == -1<<63 {
				cn.fail("value is out of range, must be positive")
				return
			}
			rank = v
		case eq(args[i], "COUNT"):
			if !ok || v < 0 {
				cn.fail("COUNT can't be negative")
				return
			}
			count = v
		case eq(args[i], "MAXLEN"):
			if !ok || v < 0 {
				cn.fail("MAXLEN can't be negative")
				return
			}
			maxlen = v
		default:
			cn.fail(errSyntax)
			return
		}
		i++
	}
	e, ok := cn.getList(args[1])
	if !ok {
		return
	}
	if e == nil {
		if count >= 0 {
			cn.out.arrayHeader(0)
		} else {
			cn.out.null()
		}
		return
	}
	var found []int64
	n := e.list().len()
	skip := rank
	if skip < 0 {
		skip = -skip
	}
	skip--
	want := count
	if count < 0 {
		want = 1
	}
	for j := 0; j < n && (maxlen == 0 || int64(j) < maxlen); j++ {
		i := j
		if rank < 0 {
			i = n - 1 - j
		}
		if !bytes.Equal(e.list().index(i), args[2]) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		found = append(found, int64(i))
		if want > 0 && int64(len(found)) >= want {
			break
		}
	}
	if count < 0 {
		if len(found) == 0 {
			cn.out.null()
		} else {
			cn.out.int(found[0])
		}
		return
	}
	cn.out.arrayHeader(len(found))
	for _, v := range found {
		cn.out.int(v)
	}
}

func whereArg(b []byte) (left bool, ok bool) {
	switch {
	case eq(b, "LEFT"):
		return true, true
	case eq(b, "RIGHT"):
		return false, true
	}
	return false, false
}

func cmdLMove(cn *conn, args [][]byte) {
	from, to := false, true // RPOPLPUSH
	if len(args) == 5 {
		var ok1, ok2 bool
		from, ok1 = whereArg(args[3])
		to, ok2 = whereArg(args[4])
		if !ok1 || !ok2 {
			cn.fail(errSyntax)
			return
		}
	}
	if !cn.lmove(args[1], args[2], from, to) {
		cn.out.null()
	}
}

// lmove moves one element and answers it; false when src is empty
// (nothing answered).
func (cn *conn) lmove(src, dst []byte, from, to bool) bool {
	e, ok := cn.getList(src)
	if !ok {
		return true
	}
	if e == nil {
		return false
	}
	de, ok := cn.getList(dst)
	if !ok {
		return true
	}
	ks, d := cn.srv.ks, cn.db()
	p := ks.popVal(d, string(src), e, from)
	if de == nil || d.keys[string(dst)] != de { // absent, or src == dst just emptied
		de = ks.newList(d, dst)
	}
	ks.used += valSize(p)
	if to {
		de.list().pushFront(p)
	} else {
		de.list().pushBack(p)
	}
	ks.signalReady(cn.dbi, dst)
	cn.reply(p)
	return true
}
